package state

import (
	"net/netip"
	"testing"
)

// TestCommSetNames: the set of a community value, in either family, gives
// the value back; no other shared set does (the executor makes community
// statements for these sets only).
func TestCommSetNames(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
		ok   bool
	}{
		{SetName(CommSet("65000:100"), netip.MustParsePrefix("10.0.0.0/8")), "65000:100", true},
		{SetName(CommSet("65000:0:7"), netip.MustParsePrefix("fd00::/64")), "65000:0:7", true},
		{SetName(SetSvc, netip.MustParsePrefix("10.0.0.0/8")), "", false},
		{SetComm + "v4", "", false},
		{SetComm + "65000:1-v5", "", false},
	} {
		v, ok := CommValue(tc.set)
		if v != tc.want || ok != tc.ok {
			t.Errorf("CommValue(%q) = %q, %v; want %q, %v", tc.set, v, ok, tc.want, tc.ok)
		}
	}
}
