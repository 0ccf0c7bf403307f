package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// dockerManifest is one entry of the manifest.json that `docker load`
// reads; its paths point at the OCI layout's blobs, as `docker save` writes
// them since Docker 25.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// writeTarball writes idx, whose manifests are images, as an OCI image
// layout tarball: index.json names the image index ref (the annotations
// containerd and OCI tools read), blobs/sha256/ holds the index, every
// image's manifest, config and layers; Docker's manifest.json, beside
// them, names the first image, for docker load with the classic store.
func writeTarball(w io.Writer, ref name.Tag, idx v1.ImageIndex, images []v1.Image) error {
	rawIndex, err := idx.RawManifest()
	if err != nil {
		return err
	}
	indexDigest, err := idx.Digest()
	if err != nil {
		return err
	}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: types.OCIImageIndex, Digest: indexDigest, Size: int64(len(rawIndex)),
		Annotations: map[string]string{
			"io.containerd.image.name":          ref.Name(),
			"org.opencontainers.image.ref.name": ref.TagStr(),
		},
	}}}

	tw := tar.NewWriter(w)
	written := map[string]bool{}
	put := func(name string, data []byte) error {
		if written[name] {
			return nil
		}
		written[name] = true
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	var docker []dockerManifest
	for i, img := range images {
		manifest, err := img.RawManifest()
		if err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		config, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		configName, err := img.ConfigName()
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		if err := put(blobPath(configName), config); err != nil {
			return err
		}
		d := dockerManifest{Config: blobPath(configName), RepoTags: []string{ref.Name()}}
		for _, l := range layers {
			ld, err := l.Digest()
			if err != nil {
				return err
			}
			if !written[blobPath(ld)] {
				written[blobPath(ld)] = true
				if err := putLayer(tw, blobPath(ld), l); err != nil {
					return err
				}
			}
			d.Layers = append(d.Layers, blobPath(ld))
		}
		if err := put(blobPath(digest), manifest); err != nil {
			return err
		}
		if i == 0 {
			docker = append(docker, d)
		}
	}
	if err := put(blobPath(indexDigest), rawIndex); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"oci-layout", map[string]string{"imageLayoutVersion": "1.0.0"}}, {"index.json", index}, {"manifest.json", docker}} {
		data, err := json.Marshal(f.v)
		if err != nil {
			return err
		}
		if err := put(f.name, data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func putLayer(tw *tar.Writer, name string, l v1.Layer) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, rc)
	return err
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
