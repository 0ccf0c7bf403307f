package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testVersion is what the test builds: a version no release will have.
const testVersion = "v0.0.0-imagetest"

// The parts of the OCI and Docker formats the test reads, decoded here with
// encoding/json rather than with go-containerregistry, so that the
// library that wrote the tarball is not also the only judge of it.
type (
	descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
	}
	ociIndex struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}
	ociManifest struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}
	imageConfig struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Config       struct {
			Entrypoint []string          `json:"Entrypoint"`
			Cmd        []string          `json:"Cmd"`
			User       string            `json:"User"`
			Env        []string          `json:"Env"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
		RootFS struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
)

// TestImage builds the image as make image does (go build with
// CGO_ENABLED=0, -trimpath and the version in -ldflags; no container
// daemon), then opens the tarball as docker load and ctr import would:
// manifest.json, index.json, the OCI manifest and config, every blob
// against its digest; and the binary in the layer, which must be the one
// built, static, and answer `version` with the version it was built with.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent (minutes on a cold cache): not in -short")
	}
	dir := t.TempDir()
	o := options{repo: "../..", version: testVersion, image: defaultImage, arch: runtime.GOARCH,
		out: filepath.Join(dir, "peeragent.tar"), binary: filepath.Join(dir, "built"), goCmd: "go"}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(o.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %v: %s, %d bytes, manifest %s", res.ref, time.Since(start).Round(time.Second), o.out, st.Size(), res.manifest)
	files := readTar(t, o.out)
	ref := defaultImage + ":" + testVersion

	// Every blob is content-addressed.
	for name, data := range files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && hexDigest != "" && sha(data) != hexDigest {
			t.Errorf("%s: content has sha256 %s", name, sha(data))
		}
	}
	// oci-layout and index.json (ctr import, OCI tools).
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", got)
	}
	var index ociIndex
	decodeJSON(t, files, "index.json", &index)
	if len(index.Manifests) != 1 || index.SchemaVersion != 2 {
		t.Fatalf("index.json: %+v, want one manifest", index)
	}
	md := index.Manifests[0]
	if md.MediaType != "application/vnd.oci.image.manifest.v1+json" || md.Digest != "sha256:"+res.manifest.Hex ||
		md.Annotations["io.containerd.image.name"] != ref || md.Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Errorf("index.json manifest %+v, want an OCI manifest %s named %s", md, res.manifest, ref)
	}
	var m ociManifest
	decodeJSON(t, files, digestPath(md.Digest), &m)
	if m.SchemaVersion != 2 || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("manifest %+v, want an OCI config and one gzip layer", m)
	}
	// manifest.json (docker load) names the same config and layer.
	var docker []dockerManifest
	decodeJSON(t, files, "manifest.json", &docker)
	if len(docker) != 1 || !slices.Equal(docker[0].RepoTags, []string{ref}) ||
		docker[0].Config != digestPath(m.Config.Digest) || !slices.Equal(docker[0].Layers, []string{digestPath(m.Layers[0].Digest)}) {
		t.Fatalf("manifest.json %+v, want %s with config %s and layer %s", docker, ref, m.Config.Digest, m.Layers[0].Digest)
	}
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		if int64(len(files[digestPath(d.Digest)])) != d.Size {
			t.Errorf("blob %s: %d bytes, manifest says %d", d.Digest, len(files[digestPath(d.Digest)]), d.Size)
		}
	}

	// The config: how the image runs.
	var cfg imageConfig
	decodeJSON(t, files, digestPath(m.Config.Digest), &cfg)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"os", cfg.OS, "linux"},
		{"architecture", cfg.Architecture, runtime.GOARCH},
		{"entrypoint", cfg.Config.Entrypoint, []string{"/peeragent"}},
		{"cmd", cfg.Config.Cmd, []string{"run"}},
		{"user (non-root)", cfg.Config.User, "65532:65532"},
		{"env", cfg.Config.Env, []string{"PATH=/"}},
		{"version label", cfg.Config.Labels["org.opencontainers.image.version"], testVersion},
		{"licenses label", cfg.Config.Labels["org.opencontainers.image.licenses"], "Apache-2.0"},
		{"rootfs type", cfg.RootFS.Type, "layers"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("config %s: %v, want %v", c.what, c.got, c.want)
		}
	}

	// The layer: /peeragent is the binary built, static; the licenses.
	compressed := files[digestPath(m.Layers[0].Digest)]
	uncompressed := gunzip(t, compressed)
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+sha(uncompressed) {
		t.Errorf("rootfs diff_ids %v, want the layer's uncompressed sha256:%s", cfg.RootFS.DiffIDs, sha(uncompressed))
	}
	layer := readTarBytes(t, uncompressed)
	built, err := os.ReadFile(o.binary)
	if err != nil {
		t.Fatal(err)
	}
	if bin, ok := layer["peeragent"]; !ok || !bytes.Equal(bin.data, built) {
		t.Fatalf("the layer's /peeragent (%d bytes) is not the binary built (%d bytes)", len(bin.data), len(built))
	} else if bin.mode != 0o755 || bin.uid != 0 {
		t.Errorf("/peeragent mode %o uid %d, want 755 root", bin.mode, bin.uid)
	}
	for _, f := range []string{"LICENSE", "NOTICE"} {
		want, err := os.ReadFile(filepath.Join(o.repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(layer["licenses/"+f].data, want) {
			t.Errorf("/licenses/%s is not the repository's %s", f, f)
		}
	}
	checkStatic(t, layer["peeragent"].data)

	// The extracted binary runs and knows its version.
	exe := filepath.Join(dir, "extracted")
	if err := os.WriteFile(exe, layer["peeragent"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", exe, err)
	}
	t.Logf("the image's /peeragent version:\n%s", out)
	if first, _, _ := strings.Cut(string(out), "\n"); first != "peeragent "+testVersion {
		t.Errorf("version says %q, want %q", first, "peeragent "+testVersion)
	}
	var info struct{ Version, Revision string }
	if out, err := exec.Command(exe, "version", "-o", "json").Output(); err != nil || json.Unmarshal(out, &info) != nil {
		t.Fatalf("version -o json: %v: %s", err, out)
	}
	if rev := cfg.Config.Labels["org.opencontainers.image.revision"]; info.Revision != rev {
		t.Errorf("binary revision %q, image revision label %q", info.Revision, rev)
	}

	// Reproducible: the same source and version give the same image.
	again := o
	again.out, again.binary = filepath.Join(dir, "again.tar"), ""
	if res2, err := build(ctx, again); err != nil || res2.manifest != res.manifest {
		t.Errorf("built again: manifest %v (%v), want %s", res2.manifest, err, res.manifest)
	}

	// A second reader: go-containerregistry's docker-tarball reader finds
	// the same image by its tag.
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(o.out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// It synthesises a Docker manifest from manifest.json, so compare the
	// config and the layer, not the manifest digest.
	cfgName, err := img.ConfigName()
	if err != nil || "sha256:"+cfgName.Hex != m.Config.Digest {
		t.Errorf("read back: config %v (%v), want %s", cfgName, err, m.Config.Digest)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 1 {
		t.Errorf("read back: layers %v (%v), want 1", layers, err)
	} else if d, err := layers[0].Digest(); err != nil || "sha256:"+d.Hex != m.Layers[0].Digest {
		t.Errorf("read back: layer %v (%v), want %s", d, err, m.Layers[0].Digest)
	}
}

func TestBadVersionIsRefused(t *testing.T) {
	for _, v := range []string{"v1.0.0+build.1", "has space", ".leading-dot", strings.Repeat("x", 129)} {
		t.Run(v[:min(len(v), 20)], func(t *testing.T) {
			o := options{repo: "../..", version: v, image: defaultImage, arch: runtime.GOARCH, out: filepath.Join(t.TempDir(), "x.tar"), goCmd: "false"}
			if _, err := build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "not an image tag") {
				t.Errorf("build with version %q: %v, want not an image tag", v, err)
			}
		})
	}
}

// checkStatic fails unless bin is an ELF executable with no interpreter
// and no shared libraries: it runs on an empty base.
func checkStatic(t *testing.T, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/peeragent is not ELF: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/peeragent is dynamically linked (program header %v)", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Errorf("/peeragent needs shared libraries %v", libs)
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for name, e := range readTarBytes(t, data) {
		files[name] = e.data
	}
	return files
}

type entry struct {
	data     []byte
	mode     int64
	uid      int
	typeflag byte
}

func readTarBytes(t *testing.T, data []byte) map[string]entry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[h.Name]; dup {
			t.Errorf("tar entry %s twice", h.Name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = entry{data: b, mode: h.Mode, uid: h.Uid, typeflag: h.Typeflag}
	}
}

func decodeJSON(t *testing.T, files map[string][]byte, name string, into any) {
	t.Helper()
	data, ok := files[name]
	if !ok {
		t.Fatalf("no %s in the tarball", name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func digestPath(d string) string { return "blobs/" + strings.Replace(d, ":", "/", 1) }

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
