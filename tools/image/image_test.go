package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

const ociIndexType = "application/vnd.oci.image.index.v1+json"

// The parts of the OCI and Docker formats the test reads, decoded here with
// encoding/json rather than with go-containerregistry, so that the
// library that wrote the tarball is not also the only judge of it.
type (
	descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
		Platform    *platform         `json:"platform"`
	}
	ociIndex struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}
	platform struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
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
// CGO_ENABLED=0, -trimpath and the version in -ldflags, for amd64 and
// arm64; no container daemon), then opens the tarball as ctr import and
// docker load would: index.json, the image index and each platform's
// manifest and config, manifest.json, every blob against its digest; the
// binary in each layer, which must be the one built for that
// architecture, static; the host's answers `version` with the version it
// was built with. Then the SBOM beside it, against `go version -m` and
// go.sum.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent twice (minutes on a cold cache): not in -short")
	}
	dir := t.TempDir()
	arches := []string{"amd64", "arm64"}
	if !slices.Contains(arches, runtime.GOARCH) {
		arches = append(arches, runtime.GOARCH)
	}
	o := options{repo: "../..", version: testVersion, image: defaultImage, arches: arches,
		out: filepath.Join(dir, "peeragent.oci.tar"), sbom: filepath.Join(dir, "peeragent.spdx.json"),
		binDir: filepath.Join(dir, "bin"), goCmd: "go"}
	if err := os.Mkdir(o.binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
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
	t.Logf("built %s in %v: %s, %d bytes, index %s, manifests %v", res.ref, time.Since(start).Round(time.Second), o.out, st.Size(), res.index, res.manifests)
	files := readTar(t, o.out)
	ref := defaultImage + ":" + testVersion

	// Every blob is content-addressed.
	for name, data := range files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && hexDigest != "" && sha(data) != hexDigest {
			t.Errorf("%s: content has sha256 %s", name, sha(data))
		}
	}
	// oci-layout and index.json (ctr import, OCI tools): one image index,
	// named.
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", got)
	}
	var top ociIndex
	decodeJSON(t, files, "index.json", &top)
	if len(top.Manifests) != 1 || top.SchemaVersion != 2 || top.MediaType != ociIndexType {
		t.Fatalf("index.json: %+v, want an OCI index of one index", top)
	}
	id := top.Manifests[0]
	if id.MediaType != ociIndexType || id.Digest != res.index.String() || id.Size != int64(len(files[digestPath(id.Digest)])) ||
		id.Annotations["io.containerd.image.name"] != ref || id.Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Errorf("index.json names %+v, want the image index %s named %s", id, res.index, ref)
	}
	// The image index: one manifest per architecture, with its platform.
	var index ociIndex
	decodeJSON(t, files, digestPath(id.Digest), &index)
	if index.SchemaVersion != 2 || index.MediaType != ociIndexType || len(index.Manifests) != len(arches) {
		t.Fatalf("image index %+v, want %d manifests", index, len(arches))
	}
	configs := map[string]string{}
	var first ociManifest
	for i, md := range index.Manifests {
		arch := arches[i]
		if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != arch ||
			md.MediaType != "application/vnd.oci.image.manifest.v1+json" || md.Digest != res.manifests[i].String() ||
			md.Size != int64(len(files[digestPath(md.Digest)])) {
			t.Errorf("index manifest %d: %+v (platform %+v), want an OCI manifest %s for linux/%s", i, md, md.Platform, res.manifests[i], arch)
			continue
		}
		m := checkPlatformImage(t, files, md, arch, filepath.Join(o.binDir, "peeragent-linux-"+arch), o.repo)
		configs[arch] = m.Config.Digest
		if i == 0 {
			first = m
		}
	}
	if len(configs) != len(arches) {
		t.FailNow()
	}

	// manifest.json (docker load, classic store) names the first image.
	var docker []dockerManifest
	decodeJSON(t, files, "manifest.json", &docker)
	if len(docker) != 1 || !slices.Equal(docker[0].RepoTags, []string{ref}) ||
		docker[0].Config != digestPath(first.Config.Digest) || !slices.Equal(docker[0].Layers, []string{digestPath(first.Layers[0].Digest)}) {
		t.Fatalf("manifest.json %+v, want %s with config %s and layer %s", docker, ref, first.Config.Digest, first.Layers[0].Digest)
	}

	// The host's binary runs and knows its version.
	host := filepath.Join(o.binDir, "peeragent-linux-"+runtime.GOARCH)
	out, err := exec.Command(host, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", host, err)
	}
	t.Logf("the image's /peeragent version:\n%s", out)
	if first, _, _ := strings.Cut(string(out), "\n"); first != "peeragent "+testVersion {
		t.Errorf("version says %q, want %q", first, "peeragent "+testVersion)
	}
	var info struct{ Version, Revision string }
	if out, err := exec.Command(host, "version", "-o", "json").Output(); err != nil || json.Unmarshal(out, &info) != nil {
		t.Fatalf("version -o json: %v: %s", err, out)
	}
	var cfg imageConfig
	decodeJSON(t, files, digestPath(configs[runtime.GOARCH]), &cfg)
	if rev := cfg.Config.Labels["org.opencontainers.image.revision"]; info.Revision != rev {
		t.Errorf("binary revision %q, image revision label %q", info.Revision, rev)
	}

	sbomData, err := os.ReadFile(o.sbom)
	if err != nil {
		t.Fatal(err)
	}
	checkSBOM(t, sbomData, host, o.repo, res)

	// Reproducible: the same source and version give the same index and SBOM.
	again := o
	again.out, again.sbom, again.binDir = filepath.Join(dir, "again.tar"), filepath.Join(dir, "again.spdx.json"), ""
	if res2, err := build(ctx, again); err != nil || res2.index != res.index {
		t.Errorf("built again: index %v (%v), want %s", res2.index, err, res.index)
	} else if data, err := os.ReadFile(again.sbom); err != nil || !bytes.Equal(data, sbomData) {
		t.Errorf("built again: the SBOM differs (%v)", err)
	}

	// A second reader: go-containerregistry's docker-tarball reader finds
	// the first image by its tag.
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
	if err != nil || cfgName.String() != first.Config.Digest {
		t.Errorf("read back: config %v (%v), want %s", cfgName, err, first.Config.Digest)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 1 {
		t.Errorf("read back: layers %v (%v), want 1", layers, err)
	} else if d, err := layers[0].Digest(); err != nil || d.String() != first.Layers[0].Digest {
		t.Errorf("read back: layer %v (%v), want %s", d, err, first.Layers[0].Digest)
	}
}

// elfMachine is the ELF machine of a GOARCH's binary.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "riscv64": elf.EM_RISCV,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "386": elf.EM_386, "arm": elf.EM_ARM, "loong64": elf.EM_LOONGARCH}

// checkPlatformImage checks the image md of the index for linux/arch: its
// manifest, config (how it runs) and layer (/peeragent is builtBin, a
// static ELF for arch; the licenses).
func checkPlatformImage(t *testing.T, files map[string][]byte, md descriptor, arch, builtBin, repo string) ociManifest {
	t.Helper()
	var m ociManifest
	decodeJSON(t, files, digestPath(md.Digest), &m)
	if m.SchemaVersion != 2 || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("%s manifest %+v, want an OCI config and one gzip layer", arch, m)
	}
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		if data, ok := files[digestPath(d.Digest)]; !ok || int64(len(data)) != d.Size {
			t.Errorf("%s blob %s: %d bytes (present %v), manifest says %d", arch, d.Digest, len(data), ok, d.Size)
		}
	}
	var cfg imageConfig
	decodeJSON(t, files, digestPath(m.Config.Digest), &cfg)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"os", cfg.OS, "linux"},
		{"architecture", cfg.Architecture, arch},
		{"entrypoint", cfg.Config.Entrypoint, []string{"/peeragent"}},
		{"cmd", cfg.Config.Cmd, []string{"run"}},
		{"user (non-root)", cfg.Config.User, "65532:65532"},
		{"env", cfg.Config.Env, []string{"PATH=/"}},
		{"version label", cfg.Config.Labels["org.opencontainers.image.version"], testVersion},
		{"licenses label", cfg.Config.Labels["org.opencontainers.image.licenses"], "Apache-2.0"},
		{"rootfs type", cfg.RootFS.Type, "layers"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s config %s: %v, want %v", arch, c.what, c.got, c.want)
		}
	}
	uncompressed := gunzip(t, files[digestPath(m.Layers[0].Digest)])
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+sha(uncompressed) {
		t.Errorf("%s rootfs diff_ids %v, want the layer's uncompressed sha256:%s", arch, cfg.RootFS.DiffIDs, sha(uncompressed))
	}
	layer := readTarBytes(t, uncompressed)
	built, err := os.ReadFile(builtBin)
	if err != nil {
		t.Fatal(err)
	}
	bin, ok := layer["peeragent"]
	if !ok || !bytes.Equal(bin.data, built) {
		t.Fatalf("%s: the layer's /peeragent (%d bytes) is not the binary built (%d bytes)", arch, len(bin.data), len(built))
	} else if bin.mode != 0o755 || bin.uid != 0 {
		t.Errorf("%s: /peeragent mode %o uid %d, want 755 root", arch, bin.mode, bin.uid)
	}
	for _, f := range []string{"LICENSE", "NOTICE"} {
		want, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(layer["licenses/"+f].data, want) {
			t.Errorf("%s: /licenses/%s is not the repository's %s", arch, f, f)
		}
	}
	checkStatic(t, bin.data, elfMachine[arch])
	return m
}

// checkSBOM reads the SPDX document as JSON and checks it against what
// `go version -m` says of the host's binary and the repository's go.sum.
func checkSBOM(t *testing.T, data []byte, bin, repo string, res result) {
	t.Helper()
	var doc struct {
		SPDXVersion, DataLicense, SPDXID, Name, DocumentNamespace string
		CreationInfo                                              struct {
			Created  string
			Creators []string
		}
		DocumentDescribes []string
		Packages          []struct {
			Name, SPDXID, VersionInfo, DownloadLocation string
			FilesAnalyzed                               *bool
			Checksums                                   []struct{ Algorithm, ChecksumValue string }
			ExternalRefs                                []struct{ ReferenceCategory, ReferenceType, ReferenceLocator string }
		}
		Relationships []struct{ SPDXElementID, RelationshipType, RelatedSPDXElement string }
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("SBOM: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" ||
		!strings.HasPrefix(doc.DocumentNamespace, "https://") || !strings.Contains(doc.DocumentNamespace, res.index.Hex) ||
		len(doc.CreationInfo.Creators) == 0 || doc.Name == "" {
		t.Errorf("SBOM document %s %s %s %q %q %v", doc.SPDXVersion, doc.DataLicense, doc.SPDXID, doc.Name, doc.DocumentNamespace, doc.CreationInfo.Creators)
	}
	if _, err := time.Parse(time.RFC3339, doc.CreationInfo.Created); err != nil || !strings.HasSuffix(doc.CreationInfo.Created, "Z") {
		t.Errorf("SBOM created %q: want UTC RFC 3339 (%v)", doc.CreationInfo.Created, err)
	}

	// What the binary holds, by go version -m (the go command's reader),
	// and go.sum's hashes.
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	type mod struct{ path, version string }
	var mods []mod
	var mainPath, goVersion string
	for i, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimPrefix(line, "\t"), "\t")
		switch {
		case i == 0:
			_, goVersion, _ = strings.Cut(line, ": ")
		case f[0] == "mod" && len(f) >= 2:
			mainPath = f[1]
		case f[0] == "dep" && len(f) >= 3:
			mods = append(mods, mod{f[1], f[2]})
		case f[0] == "=>" && len(f) >= 3:
			mods[len(mods)-1] = mod{f[1], f[2]}
		}
	}
	if len(mods) < 10 || mainPath != "github.com/peeragent/peeragent" {
		t.Fatalf("go version -m: main %q, %d modules:\n%s", mainPath, len(mods), out)
	}
	goSum := map[string]string{}
	sumData, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(sumData), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			goSum[f[0]+" "+f[1]] = f[2]
		}
	}

	type pkgInfo struct{ id, version, purl, sha256 string }
	byName := map[string]pkgInfo{}
	ids := map[string]bool{}
	spdxID := regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)
	for _, p := range doc.Packages {
		if !spdxID.MatchString(p.SPDXID) || ids[p.SPDXID] {
			t.Errorf("SBOM package %s: SPDXID %q invalid or not unique", p.Name, p.SPDXID)
		}
		ids[p.SPDXID] = true
		if _, dup := byName[p.Name]; dup {
			t.Errorf("SBOM package %s twice", p.Name)
		}
		if p.DownloadLocation == "" || p.FilesAnalyzed == nil || *p.FilesAnalyzed || len(p.ExternalRefs) != 1 ||
			p.ExternalRefs[0].ReferenceCategory != "PACKAGE-MANAGER" || p.ExternalRefs[0].ReferenceType != "purl" {
			t.Errorf("SBOM package %s: downloadLocation %q, filesAnalyzed %v, externalRefs %+v", p.Name, p.DownloadLocation, p.FilesAnalyzed, p.ExternalRefs)
			continue
		}
		info := pkgInfo{id: p.SPDXID, version: p.VersionInfo, purl: p.ExternalRefs[0].ReferenceLocator}
		for _, c := range p.Checksums {
			if c.Algorithm == "SHA256" {
				info.sha256 = c.ChecksumValue
			}
		}
		byName[p.Name] = info
	}
	root, ok := byName[mainPath]
	if !ok || root.version != testVersion || root.purl != "pkg:golang/github.com/peeragent/peeragent@"+testVersion ||
		!slices.Equal(doc.DocumentDescribes, []string{root.id}) {
		t.Fatalf("SBOM root %+v, describes %v, want %s at %s", root, doc.DocumentDescribes, mainPath, testVersion)
	}
	if std := byName["stdlib"]; std.version != goVersion || std.purl != "pkg:golang/stdlib@"+goVersion {
		t.Errorf("SBOM stdlib %+v, want %s", std, goVersion)
	}
	if len(doc.Packages) != len(mods)+2 {
		t.Errorf("SBOM: %d packages, want %d modules + the agent + stdlib", len(doc.Packages), len(mods))
	}
	checked := 0
	for _, m := range mods {
		p, ok := byName[m.path]
		wantPurl := "pkg:golang/" + m.path + "@" + strings.ReplaceAll(m.version, "+", "%2B")
		if !ok || p.version != m.version || p.purl != wantPurl {
			t.Errorf("SBOM module %s %s: %+v, want purl %s", m.path, m.version, p, wantPurl)
			continue
		}
		h1, inSum := goSum[m.path+" "+m.version]
		if !inSum {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h1, "h1:"))
		if err != nil || p.sha256 != hex.EncodeToString(raw) {
			t.Errorf("SBOM module %s %s: sha256 %q, want go.sum's %s as hex", m.path, m.version, p.sha256, h1)
		}
		checked++
	}
	if checked == 0 {
		t.Errorf("SBOM: no module's checksum checked against go.sum")
	}
	// The document describes the agent, which contains every other package.
	contains := map[string]int{}
	for _, r := range doc.Relationships {
		switch {
		case r.SPDXElementID == "SPDXRef-DOCUMENT" && r.RelationshipType == "DESCRIBES" && r.RelatedSPDXElement == root.id:
		case r.SPDXElementID == root.id && r.RelationshipType == "CONTAINS" && ids[r.RelatedSPDXElement]:
			contains[r.RelatedSPDXElement]++
		default:
			t.Errorf("SBOM relationship %+v", r)
		}
	}
	if len(contains) != len(doc.Packages)-1 || len(doc.Relationships) != len(doc.Packages) {
		t.Errorf("SBOM: %d relationships, the agent contains %d of %d other packages", len(doc.Relationships), len(contains), len(doc.Packages)-1)
	}
	t.Logf("SBOM: %d packages, %d checksums checked against go.sum", len(doc.Packages), checked)
}

func TestBadVersionIsRefused(t *testing.T) {
	for _, v := range []string{"v1.0.0+build.1", "has space", ".leading-dot", strings.Repeat("x", 129)} {
		t.Run(v[:min(len(v), 20)], func(t *testing.T) {
			o := options{repo: "../..", version: v, image: defaultImage, arches: []string{runtime.GOARCH}, out: filepath.Join(t.TempDir(), "x.tar"), goCmd: "false"}
			if _, err := build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "not an image tag") {
				t.Errorf("build with version %q: %v, want not an image tag", v, err)
			}
		})
	}
}

// checkStatic fails unless bin is an ELF executable for machine with no
// interpreter and no shared libraries: it runs on an empty base.
func checkStatic(t *testing.T, bin []byte, machine elf.Machine) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/peeragent is not ELF: %v", err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("/peeragent is for %v, want %v", f.Machine, machine)
	}
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
