// Command image builds the agent's container image without a container
// daemon: one OCI image index with an image per architecture (linux/amd64
// and linux/arm64 by default), each a static peeragent binary
// (CGO_ENABLED=0, -trimpath, the version set with -ldflags -X) on an empty
// base, plus the LICENSE and NOTICE files; and beside it an SPDX 2.3 JSON
// SBOM of the Go modules linked into the binaries (read from the binaries'
// build information, debug/buildinfo).
//
// The tarball is an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) whose index.json names the image index, as `docker
// save` with the containerd image store and `docker buildx build --output
// type=oci` write it: `ctr image import`, `podman load` and `docker load -i`
// with the containerd image store take the index; Docker's manifest.json,
// beside it, names the first architecture's image for `docker load` with
// the classic image store, which holds one platform per tag.
//
//	go -C tools/image run . -repo ../.. -version v0.1.0 -arch amd64,arm64 -o peeragent.oci.tar
//
// make image runs it; see README.md beside this file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

func main() {
	var o options
	var arches string
	flag.StringVar(&o.repo, "repo", "../..", "the peeragent repository (its go.mod, cmd/peeragent, LICENSE, NOTICE)")
	flag.StringVar(&o.version, "version", "", "the agent's version: set in the binary (-ldflags -X) and the image's tag (required)")
	flag.StringVar(&o.image, "image", defaultImage, "the image's repository; the tag is the version")
	flag.StringVar(&arches, "arch", "amd64,arm64", "GOARCHes of the binaries and the images in the index, comma-separated; the first is manifest.json's")
	flag.StringVar(&o.out, "o", "", "the tarball to write (default peeragent-VERSION.oci.tar)")
	flag.StringVar(&o.sbom, "sbom", "", "the SPDX JSON SBOM to write (default the tarball's name with .spdx.json for .oci.tar)")
	flag.StringVar(&o.binDir, "bin-dir", "", "also keep the built binaries in this directory, as peeragent-linux-ARCH")
	flag.StringVar(&o.goCmd, "go", "go", "the go command that builds the binaries")
	flag.Parse()
	if o.version == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	o.arches = strings.Split(arches, ",")
	if o.out == "" {
		o.out = fmt.Sprintf("peeragent-%s.oci.tar", o.version)
	}
	if o.sbom == "" {
		o.sbom = strings.TrimSuffix(strings.TrimSuffix(o.out, ".tar"), ".oci") + ".spdx.json"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := build(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s, index %s\n", o.out, res.ref, res.index)
	for i, a := range o.arches {
		fmt.Printf("  linux/%s: manifest %s\n", a, res.manifests[i])
	}
	fmt.Printf("%s: SPDX 2.3, %d packages\n", o.sbom, res.sbomPackages)
}
