// This module exists only for the GoBGP floor benchmark of issue 9 (the loop,
// floor.go, with no GoBGP import); it is not part of
// github.com/peeragent/peeragent. v3/ and v4/ are its commands, one module
// each, so that several GoBGP releases can be built. See README.md.
module github.com/peeragent/peeragent/tools/gobgpfloor

go 1.26.0
