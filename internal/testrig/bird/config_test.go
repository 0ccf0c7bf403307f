package bird

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func validConfig() Config {
	return Config{
		Address: netip.MustParseAddr("127.0.0.1"), Port: 10179, AS: 65001,
		Neighbors: []Neighbor{{Address: netip.MustParseAddr("127.0.0.2"), Port: 10180, AS: 65002,
			Password: "pw", Passive: true, GracefulRestart: "on", GracefulRestartTime: 8,
			Extra: []string{"hold time 9;"}}},
		Announce: []netip.Prefix{netip.MustParsePrefix("10.99.0.1/24"), netip.MustParsePrefix("fd00::/64")},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(c *Config)
		wantErr string
	}{
		{name: "valid", edit: func(*Config) {}},
		{name: "ipv6-without-router-id", edit: func(c *Config) { c.Address = netip.MustParseAddr("::1") },
			wantErr: "not IPv4"},
		{name: "ipv6-with-router-id", edit: func(c *Config) {
			c.Address, c.RouterID = netip.MustParseAddr("::1"), netip.MustParseAddr("10.0.0.1")
			c.Neighbors[0].Address = netip.MustParseAddr("::2")
		}},
		{name: "mixed-families", edit: func(c *Config) { c.Neighbors[0].Address = netip.MustParseAddr("::1") },
			wantErr: "different families"},
		{name: "missing-port", edit: func(c *Config) { c.Port = 0 }, wantErr: "required"},
		{name: "missing-neighbor-as", edit: func(c *Config) { c.Neighbors[0].AS = 0 }, wantErr: "required"},
		{name: "bad-name", edit: func(c *Config) { c.Neighbors[0].Name = "1st-peer" }, wantErr: "not a BIRD symbol"},
		{name: "duplicate-name", edit: func(c *Config) { c.Neighbors = append(c.Neighbors, c.Neighbors[0]) },
			wantErr: "two neighbors"},
		{name: "quote-in-password", edit: func(c *Config) { c.Neighbors[0].Password = `a"b` }, wantErr: "cannot contain"},
		{name: "graceful-restart-off", edit: func(c *Config) { c.Neighbors[0].GracefulRestart = "off" }},
		{name: "graceful-restart-default", edit: func(c *Config) {
			c.Neighbors[0].GracefulRestart, c.Neighbors[0].GracefulRestartTime = "", 0
		}},
		{name: "graceful-restart-bad-mode", edit: func(c *Config) { c.Neighbors[0].GracefulRestart = "yes" },
			wantErr: "not on, off or aware"},
		{name: "graceful-restart-time-too-long", edit: func(c *Config) { c.Neighbors[0].GracefulRestartTime = 4096 },
			wantErr: "0..4095"},
		{name: "netns", edit: func(c *Config) { c.Netns = "peeragent-t-x" }},
		{name: "netns-path", edit: func(c *Config) { c.Netns = "../x" }, wantErr: "not a network namespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRender(t *testing.T) {
	text := validConfig().Render()
	for _, want := range []string{
		"router id 127.0.0.1;",
		"timeformat protocol iso long us;",
		"protocol bgp peer_127_0_0_2 {",
		"  local 127.0.0.1 port 10179 as 65001;",
		"  neighbor 127.0.0.2 port 10180 as 65002;",
		"  strict bind yes;",
		`  password "pw";`,
		"  passive yes;",
		"  hold time 9;\n",
		"  graceful restart on;\n",
		"  graceful restart time 8;\n",
		"  route 10.99.0.0/24 blackhole;",
		"  route fd00::/64 blackhole;",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("bird.conf lacks %q:\n%s", want, text)
		}
	}
	if text != validConfig().Render() {
		t.Error("Render is not deterministic")
	}
	c := validConfig()
	c.Neighbors[0].GracefulRestart, c.Neighbors[0].GracefulRestartTime = "", 0
	c.Netns = "peeragent-t-x"
	if text := c.Render(); strings.Contains(text, "graceful restart") || strings.Contains(text, "peeragent-t-x") {
		t.Errorf("BIRD's graceful-restart defaults or the namespace in bird.conf:\n%s", text)
	}
}

// TestRenderParses asks BIRD itself (bird -p) whether the config is valid.
func TestRenderParses(t *testing.T) {
	Require(t)
	bins, _ := programs.Lookup()
	path := filepath.Join(t.TempDir(), "bird.conf")
	if err := os.WriteFile(path, []byte(validConfig().Render()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bins.bird, "-p", "-c", path).CombinedOutput(); err != nil {
		t.Fatalf("bird -p: %v: %s", err, out)
	}
}
