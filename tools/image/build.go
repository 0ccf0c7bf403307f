package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	defaultImage = "ghcr.io/peeragent/peeragent"
	// versionVar is the variable the version is linked into
	// (internal/buildinfo of the agent).
	versionVar = "github.com/peeragent/peeragent/internal/buildinfo.version"
	// The image runs the agent unprivileged unless the pod says otherwise
	// (deploy/base/daemonset.yaml runs it as root with NET_BIND_SERVICE only, to
	// listen on port 179): 65532 is distroless' "nonroot".
	imageUser = "65532:65532"
	// binaryPath is the agent in the image; PATH=/ lets `kubectl exec ...
	// peeragent status` find it by name.
	binaryPath = "/peeragent"
)

var (
	// tagPattern is Docker's rule for a tag (distribution/reference), which
	// name.NewTag does not fully enforce.
	tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	entrypoint = []string{binaryPath}
	defaultCmd = []string{"run"}
	imageEnv   = []string{"PATH=/"}
)

type options struct {
	repo, version, image, out, sbom, binDir, goCmd string
	// arches are the GOARCHes of the index's images, in its order; the
	// first is the image manifest.json names.
	arches []string
}

type result struct {
	ref name.Tag
	// index is the digest of the image index (what a registry's tag
	// names); manifests are the images', in the order of options.arches.
	index        v1.Hash
	manifests    []v1.Hash
	sbomPackages int
}

// archPattern is a GOARCH: lower-case letters and digits.
var archPattern = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// build compiles the agent for each architecture, makes their images and
// the index, and writes the tarball and the SBOM.
func build(ctx context.Context, o options) (result, error) {
	ref, err := name.NewTag(o.image+":"+o.version, name.StrictValidation)
	if err == nil && !tagPattern.MatchString(o.version) {
		err = fmt.Errorf("want %s", tagPattern)
	}
	if err != nil {
		return result{}, fmt.Errorf("version %q is not an image tag: %w", o.version, err)
	}
	if len(o.arches) == 0 {
		return result{}, fmt.Errorf("no architecture")
	}
	for i, a := range o.arches {
		if !archPattern.MatchString(a) || slices.Contains(o.arches[:i], a) {
			return result{}, fmt.Errorf("architectures %q: want distinct GOARCHes", o.arches)
		}
	}
	binDir := o.binDir
	if binDir == "" {
		dir, err := os.MkdirTemp("", "peeragent-image-")
		if err != nil {
			return result{}, err
		}
		defer os.RemoveAll(dir)
		binDir = dir
	}
	if binDir, err = filepath.Abs(binDir); err != nil {
		return result{}, err
	}
	res := result{ref: ref}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var images []v1.Image
	var bins []string
	for _, arch := range o.arches {
		bin := filepath.Join(binDir, "peeragent-linux-"+arch)
		if err := compile(ctx, o, arch, bin); err != nil {
			return result{}, err
		}
		img, err := makeImage(o, arch, bin)
		if err != nil {
			return result{}, err
		}
		digest, err := img.Digest()
		if err != nil {
			return result{}, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
		images, bins = append(images, img), append(bins, bin)
		res.manifests = append(res.manifests, digest)
	}
	if res.index, err = idx.Digest(); err != nil {
		return result{}, err
	}
	f, err := os.Create(o.out)
	if err != nil {
		return result{}, err
	}
	if err := writeTarball(f, ref, idx, images); err != nil {
		f.Close()
		return result{}, fmt.Errorf("write %s: %w", o.out, err)
	}
	if err := f.Close(); err != nil {
		return result{}, err
	}
	doc, err := sbom(o.version, ref, res.index, o.arches, bins)
	if err != nil {
		return result{}, err
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return result{}, err
	}
	res.sbomPackages = len(doc.Packages)
	return res, os.WriteFile(o.sbom, append(data, '\n'), 0o644)
}

// compile builds a static agent binary for linux/arch at bin.
func compile(ctx context.Context, o options, arch, bin string) error {
	cmd := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath",
		"-ldflags", "-s -w -X "+versionVar+"="+o.version, "-o", bin, "./cmd/peeragent")
	cmd.Dir = o.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/peeragent in %s: %w", o.repo, err)
	}
	return nil
}

// makeImage puts bin, LICENSE and NOTICE in one layer on an empty base.
// Everything but the binary is fixed, so the same binary gives the same
// image digest: the creation time is the binary's VCS commit time (the
// Unix epoch without one).
func makeImage(o options, arch, bin string) (v1.Image, error) {
	created, revision := vcsStamp(bin)
	layerTar, err := layerContents(o.repo, bin, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "tools/image: " + binaryPath + " " + o.version + ", /licenses",
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: created}
	cfg.Config.Entrypoint, cfg.Config.Cmd = entrypoint, defaultCmd
	cfg.Config.User, cfg.Config.Env, cfg.Config.WorkingDir = imageUser, imageEnv, "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "peeragent",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.source":   "https://github.com/peeragent/peeragent",
	}
	if revision == "" {
		delete(cfg.Config.Labels, "org.opencontainers.image.revision")
	}
	return mutate.ConfigFile(img, cfg)
}

// vcsStamp reads the commit time and revision that go build stamped into
// bin (none in a build outside a git checkout).
func vcsStamp(bin string) (time.Time, string) {
	created, revision := time.Unix(0, 0).UTC(), ""
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return created, revision
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				created = t.UTC()
			}
		}
	}
	return created, revision
}

// layerContents is the layer's tar: /peeragent (0755) and /licenses/.
func layerContents(repo, bin string, mtime time.Time) ([]byte, error) {
	type file struct {
		name, src string
		mode      int64
	}
	files := []file{
		{"licenses/", "", 0o755},
		{"licenses/LICENSE", filepath.Join(repo, "LICENSE"), 0o644},
		{"licenses/NOTICE", filepath.Join(repo, "NOTICE"), 0o644},
		{binaryPath[1:], bin, 0o755},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeDir}
		var data []byte
		if f.src != "" {
			var err error
			if data, err = os.ReadFile(f.src); err != nil {
				return nil, err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fileSHA256 is the hex sha256 of the file at path ("" if unreadable).
func fileSHA256(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}
