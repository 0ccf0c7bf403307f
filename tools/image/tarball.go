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

// writeTarball writes img as an OCI image layout tarball holding one image
// named ref (index.json annotations for containerd and the OCI ref name),
// with Docker's manifest.json beside it.
func writeTarball(w io.Writer, ref name.Tag, img v1.Image) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
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
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: mt, Digest: digest, Size: int64(len(manifest)),
		Annotations: map[string]string{
			"io.containerd.image.name":          ref.Name(),
			"org.opencontainers.image.ref.name": ref.TagStr(),
		},
	}}}
	docker := []dockerManifest{{Config: blobPath(configName), RepoTags: []string{ref.Name()}}}

	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
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
	if err := put(blobPath(configName), config); err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		if err := putLayer(tw, blobPath(d), l); err != nil {
			return err
		}
		docker[0].Layers = append(docker[0].Layers, blobPath(d))
	}
	if err := put(blobPath(digest), manifest); err != nil {
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
