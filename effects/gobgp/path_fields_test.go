package gobgp

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// notSent are the fields of state.Path that pathFor does not put on the
// wire, and why. Every other field must change what pathFor gives GoBGP
// when it changes, or an attribute would be computed and never advertised
// (as communities once were, before the converter).
var notSent = map[string]string{
	"Origins": "bookkeeping: which objects produce the path",
}

// pathWire is what pathFor gives GoBGP, serialised: the NLRI and every
// attribute in order.
func pathWire(t *testing.T, p *state.Path) []byte {
	t.Helper()
	ap, err := pathFor(p)
	if err != nil {
		t.Fatalf("pathFor(%+v): %v", p, err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s %s|", ap.Family, ap.Nlri)
	for _, a := range ap.Attrs {
		b, err := a.Serialize()
		if err != nil {
			t.Fatalf("serialise %s: %v", a, err)
		}
		out.Write(b)
	}
	return out.Bytes()
}

func TestPathForCoversEveryPathField(t *testing.T) {
	base := state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"), NextHop: netip.MustParseAddr("10.0.0.1"),
		Communities: []string{"65000:100", "65000:0:7"}, Origins: []string{"blockaffinity/a"}}
	want := pathWire(t, &base)
	fieldcov.Ignores(t, base, notSent, "the path GoBGP sends",
		"put it in pathFor (paths.go)",
		func(changed state.Path) bool { return !bytes.Equal(pathWire(t, &changed), want) })
}
