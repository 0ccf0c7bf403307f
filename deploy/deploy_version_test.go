package deploy

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestImageTagIsVERSION: the version the DaemonSet runs is the one make
// image stamps, both read from the repository's VERSION file (the
// Makefile's default VERSION). A release bumps VERSION and this test names
// every image that still says the old one.
func TestImageTagIsVERSION(t *testing.T) {
	data, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(data))
	if !versionedImage.MatchString("ghcr.io/peeragent/peeragent:"+version) || strings.Count(string(data), "\n") != 1 {
		t.Fatalf("VERSION %q: want one line vMAJOR.MINOR.PATCH[-PRE]", data)
	}
	ds := only[*appsv1.DaemonSet](t, loadManifests(t))
	pod := ds.Spec.Template.Spec
	want := "ghcr.io/peeragent/peeragent:" + version
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		if c.Image != want {
			t.Errorf("%s: container %s image %q, want %q (VERSION)", ds.Name, c.Name, c.Image, want)
		}
	}
}
