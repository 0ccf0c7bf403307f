// Command image builds the agent's container image as a tarball, without a
// container daemon: a static peeragent binary (CGO_ENABLED=0, -trimpath,
// the version set with -ldflags -X) on an empty base, plus the LICENSE and
// NOTICE files. The tarball is an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) that also carries Docker's manifest.json, so both
// `docker load -i` and `ctr image import` (or `podman load`) take it, as
// the tarballs of `docker save` since Docker 25 are.
//
//	go -C tools/image run . -repo ../.. -version v0.1.0 -o peeragent.tar
//
// make image runs it; see README.md beside this file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
)

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", "../..", "the peeragent repository (its go.mod, cmd/peeragent, LICENSE, NOTICE)")
	flag.StringVar(&o.version, "version", "", "the agent's version: set in the binary (-ldflags -X) and the image's tag (required)")
	flag.StringVar(&o.image, "image", defaultImage, "the image's repository; the tag is the version")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH of the binary and the image")
	flag.StringVar(&o.out, "o", "", "the tarball to write (default peeragent-VERSION-ARCH.tar)")
	flag.StringVar(&o.binary, "binary", "", "also keep the built binary at this path")
	flag.StringVar(&o.goCmd, "go", "go", "the go command that builds the binary")
	flag.Parse()
	if o.version == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if o.out == "" {
		o.out = fmt.Sprintf("peeragent-%s-%s.tar", o.version, o.arch)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := build(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s (%s/%s, manifest %s)\n", o.out, res.ref, "linux", o.arch, res.manifest)
}
