// Package loglimit is the slog.Handler that bounds the cost of a failure
// repeated many times (docs/routes.md §9.7 rule 3): 20,000 routes whose
// next hop is not on-link, or a BGP port another process holds, each fail
// again at every retry. Records at Warn and above are deduplicated per key
// (level, message and the neighbor's address when the record names one,
// never the prefix: the keys stay as few as the causes) with a rate limit:
// Burst records of a key pass per Window, the rest are counted, and the
// next record of that key to pass carries the count as "suppressed". Lower
// levels pass untouched: they are off in production and asked for when on.
package loglimit
