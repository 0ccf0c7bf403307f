package main

import (
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The SPDX 2.3 JSON document the image's SBOM is (spdx.github.io/spdx-spec/v2.3),
// the fields it uses.
type (
	spdxDocument struct {
		SPDXVersion       string             `json:"spdxVersion"`
		DataLicense       string             `json:"dataLicense"`
		SPDXID            string             `json:"SPDXID"`
		Name              string             `json:"name"`
		DocumentNamespace string             `json:"documentNamespace"`
		CreationInfo      spdxCreationInfo   `json:"creationInfo"`
		DocumentDescribes []string           `json:"documentDescribes"`
		Packages          []spdxPackage      `json:"packages"`
		Relationships     []spdxRelationship `json:"relationships"`
	}
	spdxCreationInfo struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
		Comment  string   `json:"comment,omitempty"`
	}
	spdxPackage struct {
		Name                  string            `json:"name"`
		SPDXID                string            `json:"SPDXID"`
		VersionInfo           string            `json:"versionInfo"`
		DownloadLocation      string            `json:"downloadLocation"`
		FilesAnalyzed         bool              `json:"filesAnalyzed"`
		LicenseConcluded      string            `json:"licenseConcluded"`
		LicenseDeclared       string            `json:"licenseDeclared"`
		CopyrightText         string            `json:"copyrightText"`
		PrimaryPackagePurpose string            `json:"primaryPackagePurpose"`
		Checksums             []spdxChecksum    `json:"checksums,omitempty"`
		ExternalRefs          []spdxExternalRef `json:"externalRefs"`
		Comment               string            `json:"comment,omitempty"`
	}
	spdxChecksum struct {
		Algorithm     string `json:"algorithm"`
		ChecksumValue string `json:"checksumValue"`
	}
	spdxExternalRef struct {
		ReferenceCategory string `json:"referenceCategory"`
		ReferenceType     string `json:"referenceType"`
		ReferenceLocator  string `json:"referenceLocator"`
	}
	spdxRelationship struct {
		SPDXElementID      string `json:"spdxElementId"`
		RelationshipType   string `json:"relationshipType"`
		RelatedSPDXElement string `json:"relatedSpdxElement"`
	}
)

const noAssertion = "NOASSERTION"

// sbom describes the Go modules linked into the binaries bins (one per
// architecture of the index), read from their build information
// (debug/buildinfo, what `go version -m` prints): nothing is fetched. The
// agent is the document's one described package, which CONTAINS the Go
// standard library and each module (a replaced module as its replacement),
// with its purl (pkg:golang/PATH@VERSION) and, where the build recorded it,
// its go.sum hash: the h1: hash (SHA-256 of the module's file list with
// each file's SHA-256, golang.org/x/mod/sumdb/dirhash) as hex, algorithm
// SHA256. The modules are the union over the binaries (the same list for
// every architecture today). Created is the commit's time, as the image's,
// so the same commit and version give the same document.
func sbom(version string, ref name.Tag, index v1.Hash, arches, bins []string) (spdxDocument, error) {
	type module struct{ path, version, sum string }
	var mainPath, goVersion string
	mods := map[string]module{}
	var binSums []string
	for i, bin := range bins {
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return spdxDocument{}, fmt.Errorf("sbom: %w", err)
		}
		if mainPath != "" && (bi.Main.Path != mainPath || bi.GoVersion != goVersion) {
			return spdxDocument{}, fmt.Errorf("sbom: %s is %s built by %s, the others %s by %s", bin, bi.Main.Path, bi.GoVersion, mainPath, goVersion)
		}
		mainPath, goVersion = bi.Main.Path, bi.GoVersion
		for _, d := range bi.Deps {
			m := d
			if d.Replace != nil {
				m = d.Replace
			}
			mods[m.Path+"@"+m.Version] = module{m.Path, m.Version, m.Sum}
		}
		binSums = append(binSums, "linux/"+arches[i]+" sha256:"+fileSHA256(bin))
	}
	created, _ := vcsStamp(bins[0])
	ids := map[string]bool{}
	id := func(s string) string {
		base := "SPDXRef-Package-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(s, "-"), "-")
		out := base
		for n := 2; ids[out]; n++ {
			out = fmt.Sprintf("%s-%d", base, n)
		}
		ids[out] = true
		return out
	}
	pkg := func(name, version, purpose string) spdxPackage {
		return spdxPackage{
			Name: name, SPDXID: id(name + "-" + version), VersionInfo: version, DownloadLocation: noAssertion,
			LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
			PrimaryPackagePurpose: purpose,
			ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
				ReferenceLocator: "pkg:golang/" + purlEscape(name, true) + "@" + purlEscape(version, false)}},
		}
	}
	root := pkg(mainPath, version, "APPLICATION")
	root.DownloadLocation = "https://github.com/peeragent/peeragent"
	root.LicenseDeclared = "Apache-2.0"
	root.Comment = fmt.Sprintf("the binary /peeragent of the image %s (index %s); per platform: %s",
		ref.Name(), index, strings.Join(binSums, ", "))
	stdlib := pkg("stdlib", goVersion, "LIBRARY")
	stdlib.ExternalRefs[0].ReferenceLocator = "pkg:golang/stdlib@" + purlEscape(goVersion, false)
	stdlib.Comment = "the Go standard library and runtime of the Go toolchain that built the binary"
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              ref.Name(),
		DocumentNamespace: "https://github.com/peeragent/peeragent/spdx/" + ref.TagStr() + "-" + index.Algorithm + "-" + index.Hex,
		CreationInfo: spdxCreationInfo{Created: created.UTC().Format(time.RFC3339), Creators: []string{"Tool: peeragent-tools-image"},
			Comment: "the Go modules linked into the agent's binaries, read from their build information; created at the commit's time"},
		DocumentDescribes: []string{root.SPDXID},
		Packages:          []spdxPackage{root, stdlib},
		Relationships: []spdxRelationship{{"SPDXRef-DOCUMENT", "DESCRIBES", root.SPDXID},
			{root.SPDXID, "CONTAINS", stdlib.SPDXID}},
	}
	for _, k := range slices.Sorted(maps.Keys(mods)) {
		m := mods[k]
		p := pkg(m.path, m.version, "LIBRARY")
		if h, ok := strings.CutPrefix(m.sum, "h1:"); ok {
			if raw, err := base64.StdEncoding.DecodeString(h); err == nil && len(raw) == 32 {
				p.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(raw)}}
				p.Comment = "checksum: the go.sum hash " + m.sum + " as hex"
			}
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{root.SPDXID, "CONTAINS", p.SPDXID})
	}
	return doc, nil
}

// spdxIDUnsafe is what an SPDX identifier may not hold (idstring =
// [A-Za-z0-9.-]+).
var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// purlEscape percent-encodes s for a purl: everything but ASCII letters,
// digits and .-_~ (and / between a module path's segments, when path).
func purlEscape(s string, path bool) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(".-_~", c) >= 0, path && c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
