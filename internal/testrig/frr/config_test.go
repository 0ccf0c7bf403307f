package frr

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sample() Config {
	return Config{Address: addrA, Port: 1791, AS: 65001,
		Neighbors: []Neighbor{
			{Name: "to_b", Address: addrB, Port: 1792, AS: 65002, Password: "pw"},
			{Address: netip.MustParseAddr("127.0.0.3"), Port: 1793, AS: 65001, Passive: true, Extra: []string{"timers 1 3"}},
		},
		Announce: []netip.Prefix{netip.MustParsePrefix("10.99.0.1/24")},
	}
}

func TestRender(t *testing.T) {
	want := `! written by peeragent internal/testrig/frr
hostname frrtest-127-0-0-1
log stdout debugging
debug bgp neighbor-events
router bgp 65001
 bgp router-id 127.0.0.1
 bgp log-neighbor-changes
 no bgp ebgp-requires-policy
 bgp allow-martian-nexthop
 no bgp network import-check
 timers bgp 3 9
 neighbor 127.0.0.2 remote-as 65002
 neighbor 127.0.0.2 description to_b
 neighbor 127.0.0.2 port 1792
 neighbor 127.0.0.2 update-source 127.0.0.1
 neighbor 127.0.0.2 timers connect 1
 neighbor 127.0.0.2 ebgp-multihop 255
 neighbor 127.0.0.2 password pw
 neighbor 127.0.0.3 remote-as 65001
 neighbor 127.0.0.3 port 1793
 neighbor 127.0.0.3 update-source 127.0.0.1
 neighbor 127.0.0.3 timers connect 1
 neighbor 127.0.0.3 passive
 neighbor 127.0.0.3 timers 1 3
 address-family ipv4 unicast
  network 10.99.0.0/24
 exit-address-family
exit
`
	if diff := cmp.Diff(want, sample().Render()); diff != "" {
		t.Errorf("Render (-want +got):\n%s", diff)
	}
}

// TestRenderZebra: with zebra, bgpd.conf is the one without but for the
// eBGP neighbor's ebgp-multihop (single hop, as on a shared link), and
// zebra gets a config of its own.
func TestRenderZebra(t *testing.T) {
	c := sample()
	without := c.Render()
	c.Namespace, c.Zebra = "ns-frr", true
	want := strings.Replace(without, " neighbor 127.0.0.2 ebgp-multihop 255\n", "", 1)
	if want == without {
		t.Fatalf("the sample's eBGP neighbor has no ebgp-multihop without zebra:\n%s", without)
	}
	if diff := cmp.Diff(want, c.Render()); diff != "" {
		t.Errorf("Render with zebra (-want +got):\n%s", diff)
	}
	wantZebra := `! written by peeragent internal/testrig/frr
hostname frrtest-127-0-0-1-zebra
log stdout informational
`
	if diff := cmp.Diff(wantZebra, c.RenderZebra()); diff != "" {
		t.Errorf("RenderZebra (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(c *Config)
		wantErr string // empty: valid
	}{
		{name: "sample-is-valid", change: func(*Config) {}},
		{name: "ipv6-local", change: func(c *Config) { c.Address = netip.MustParseAddr("::1") }, wantErr: "router ID"},
		{name: "ipv6-local-with-ipv4-router-id", change: func(c *Config) {
			c.Address, c.RouterID = netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.9")
			c.Neighbors[0].Address = netip.MustParseAddr("::1")
		}},
		{name: "no-port", change: func(c *Config) { c.Port = 0 }, wantErr: "all three are required"},
		{name: "duplicate-neighbor", change: func(c *Config) { c.Neighbors[1].Address = addrB }, wantErr: "two neighbors"},
		{name: "password-with-space", change: func(c *Config) { c.Neighbors[0].Password = "a b" }, wantErr: "MD5 password"},
		{name: "password-too-long", change: func(c *Config) { c.Neighbors[0].Password = strings.Repeat("x", 81) }, wantErr: "MD5 password"},
		{name: "password-punctuation", change: func(c *Config) { c.Neighbors[0].Password = `!#"'\?` }},
		{name: "name-spans-lines", change: func(c *Config) { c.Neighbors[0].Name = "a\nb" }, wantErr: "spans lines"},
		{name: "invalid-prefix", change: func(c *Config) { c.Announce = []netip.Prefix{{}} }, wantErr: "not valid"},
		{name: "namespace", change: func(c *Config) { c.Namespace = "peeragent-ll-a-1" }},
		{name: "namespace-and-zebra", change: func(c *Config) { c.Namespace, c.Zebra = "peeragent-ll-a-1", true }},
		{name: "zebra-in-own-namespace", change: func(c *Config) { c.Zebra = true }, wantErr: "Zebra needs a Namespace"},
		{name: "namespace-path", change: func(c *Config) { c.Namespace = "../x" }, wantErr: "not an ip netns name"},
		{name: "namespace-space", change: func(c *Config) { c.Namespace = "a b" }, wantErr: "not an ip netns name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := sample().clone()
			tc.change(&c)
			err := c.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{name: "identical", change: func(*Config) {}},
		{name: "password-rotation", change: func(c *Config) { c.Neighbors[0].Password = "new" },
			want: []string{"neighbor 127.0.0.2 password new"}},
		{name: "password-removed", change: func(c *Config) { c.Neighbors[0].Password = "" },
			want: []string{"no neighbor 127.0.0.2 password pw"}},
		{name: "extra-replaced-removal-first", change: func(c *Config) { c.Neighbors[1].Extra = []string{"timers 2 6"} },
			want: []string{"no neighbor 127.0.0.3 timers 1 3", "neighbor 127.0.0.3 timers 2 6"}},
		{name: "neighbor-removed", change: func(c *Config) { c.Neighbors = c.Neighbors[1:] },
			want: []string{"no neighbor 127.0.0.2"}},
		{name: "ebgp-to-ibgp", change: func(c *Config) { c.Neighbors[0].AS = 65001 },
			want: []string{"no neighbor 127.0.0.2 ebgp-multihop 255", "neighbor 127.0.0.2 remote-as 65001"}},
		{name: "router-id-and-prefixes", change: func(c *Config) {
			c.RouterID = netip.MustParseAddr("1.2.3.4")
			c.Announce = []netip.Prefix{netip.MustParsePrefix("10.98.0.0/24")}
		}, want: []string{"bgp router-id 1.2.3.4", "address-family ipv4 unicast",
			"no network 10.99.0.0/24", "network 10.98.0.0/24", "exit-address-family"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := sample().clone()
			tc.change(&c)
			got, err := commands(sample(), c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandsAddNeighbor(t *testing.T) {
	old := sample()
	old.Neighbors = old.Neighbors[:1]
	got, err := commands(old, sample())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"neighbor 127.0.0.3 remote-as 65001", "neighbor 127.0.0.3 port 1793",
		"neighbor 127.0.0.3 update-source 127.0.0.1", "neighbor 127.0.0.3 timers connect 1",
		"neighbor 127.0.0.3 passive", "neighbor 127.0.0.3 timers 1 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	moved := sample()
	moved.AS = 65009
	if _, err := commands(sample(), moved); err == nil {
		t.Error("an AS change was accepted")
	}
	moved = sample()
	moved.Namespace, moved.Zebra = "peeragent-ll-a-1", true
	if _, err := commands(sample(), moved); err == nil || !strings.Contains(err.Error(), "Namespace or Zebra") {
		t.Errorf("a Namespace and Zebra change: %v, want refused", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := sample()
	d := c.clone()
	c.Neighbors[0].Password = "changed"
	c.Neighbors[1].Extra[0] = "changed"
	c.Announce[0] = netip.Prefix{}
	if d.Neighbors[0].Password != "pw" || d.Neighbors[1].Extra[0] != "timers 1 3" || !d.Announce[0].IsValid() {
		t.Errorf("clone shares memory with the original: %+v", d)
	}
}

func TestVTYGroup(t *testing.T) {
	tests := []struct{ name, out, want string }{
		{name: "debian-12", out: "zebra version 8.4.4\nCopyright 1996-2005 Kunihiro Ishiguro, et al.\nconfigured with:\n" +
			"\t'--build=x86_64-linux-gnu' '--enable-user=frr' '--enable-group=frr' '--enable-vty-group=frrvty' '--enable-configfile-mask=0640'\n",
			want: "frrvty"},
		{name: "unquoted-last", out: "zebra version 9.1\nconfigured with:\n --enable-vty-group=quagga", want: "quagga"},
		{name: "none", out: "zebra version 8.4.4\nconfigured with:\n\t'--enable-user=frr'\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := vtyGroup(tc.out); got != tc.want {
				t.Errorf("vtyGroup = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		name, out, want string
		wantErr         bool
	}{
		{name: "debian-12", out: "bgpd version 8.4.4\nCopyright 1996-2005 Kunihiro Ishiguro, et al.\n", want: "8.4.4"},
		{name: "newer-major", out: "bgpd version 10.0.1\n", want: "10.0.1"},
		{name: "dev-suffix", out: "bgpd version 8.5-dev\n", want: "8.5-dev"},
		{name: "too-old", out: "bgpd version 8.1\n", want: "8.1", wantErr: true},
		{name: "garbage", out: "zebra 1.0\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVersion(tc.out)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("parseVersion = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
