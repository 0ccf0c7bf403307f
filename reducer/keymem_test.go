package reducer

import "testing"

// TestMD5KeyMemoryProblem: about 960 keys fill optmem_max at 128 KiB (as
// measured); the problem comes at 90 % of that, before the kernel refuses.
func TestMD5KeyMemoryProblem(t *testing.T) {
	cases := []struct {
		name   string
		optmem int64
		keys   int
		want   bool
	}{
		{"unknown-limit", 0, 5000, false},
		{"few-keys", 128 << 10, 100, false},
		{"just-under-90-percent", 128 << 10, 867, false},
		{"past-90-percent", 128 << 10, 870, true},
		{"issue-960-keys", 128 << 10, 960, true},
		{"raised-limit", 4 << 20, 960, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MD5KeyMemoryProblem(c.optmem, c.keys) != ""; got != c.want {
				t.Errorf("MD5KeyMemoryProblem(%d, %d) = %q", c.optmem, c.keys, MD5KeyMemoryProblem(c.optmem, c.keys))
			}
		})
	}
}
