package clustergen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// Manifest files WriteDir writes, each a multi-document YAML file.
const (
	NodesFile   = "nodes.yaml"
	BGPFile     = "bgp.yaml" // BGPConfigurations and BGPFilters
	PeersFile   = "peers.yaml"
	SecretsFile = "secrets.yaml"
)

const calicoVersion = "crd.projectcalico.org/v1"

// WriteDir writes the cluster as manifests into dir (which must exist), in
// the form the watch file source reads: Calico objects in
// crd.projectcalico.org/v1, core v1 Nodes and Secrets.
func (c *Cluster) WriteDir(dir, namespace string) error {
	var bgp []any
	for _, x := range c.Configs {
		bgp = append(bgp, configDoc(x))
	}
	for _, f := range c.Filters {
		bgp = append(bgp, filterDoc(f))
	}
	files := map[string][]any{NodesFile: docs(c.Nodes, nodeDoc), BGPFile: bgp,
		PeersFile: docs(c.Peers, peerDoc), SecretsFile: docs(c.Secrets, func(s state.Secret) any { return secretDoc(s, namespace) })}
	for _, name := range []string{NodesFile, BGPFile, PeersFile, SecretsFile} {
		if err := writeDocs(filepath.Join(dir, name), files[name]); err != nil {
			return err
		}
	}
	return nil
}

func docs[T any](list []T, doc func(T) any) []any {
	out := make([]any, len(list))
	for i, x := range list {
		out[i] = doc(x)
	}
	return out
}

func writeDocs(path string, docs []any) error {
	var buf bytes.Buffer
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return fmt.Errorf("clustergen: %s: %w", path, err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

type obj = map[string]any

func object(apiVersion, kind string, meta, spec obj) obj {
	o := obj{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	if spec != nil {
		o["spec"] = spec
	}
	return o
}

func nodeDoc(n state.Node) any {
	ann := obj{"projectcalico.org/IPv4Address": n.IPv4Address}
	if n.IPv6Address != "" {
		ann["projectcalico.org/IPv6Address"] = n.IPv6Address
	}
	return object("v1", "Node", obj{"name": n.Name, "labels": n.Labels, "annotations": ann}, nil)
}

func configDoc(c state.BGPConfiguration) any {
	spec := obj{"asNumber": c.ASNumber}
	if c.NodeToNodeMeshEnabled != nil {
		spec["nodeToNodeMeshEnabled"] = *c.NodeToNodeMeshEnabled
	}
	if c.ListenPort != 0 {
		spec["listenPort"] = c.ListenPort
	}
	return object(calicoVersion, "BGPConfiguration", obj{"name": c.Name}, spec)
}

func filterDoc(f state.BGPFilter) any {
	rules := func(rs []state.FilterRule) []obj {
		out := make([]obj, len(rs))
		for i, r := range rs {
			o := obj{"action": r.Action}
			for k, v := range map[string]string{"matchOperator": r.MatchOperator, "cidr": r.CIDR, "source": r.Source} {
				if v != "" {
					o[k] = v
				}
			}
			out[i] = o
		}
		return out
	}
	return object(calicoVersion, "BGPFilter", obj{"name": f.Name},
		obj{"exportV4": rules(f.ExportV4), "importV4": rules(f.ImportV4)})
}

func peerDoc(p state.BGPPeer) any {
	spec := obj{}
	for k, v := range map[string]string{"node": p.Node, "nodeSelector": p.NodeSelector,
		"peerIP": p.PeerIP, "peerSelector": p.PeerSelector} {
		if v != "" {
			spec[k] = v
		}
	}
	if p.ASNumber != 0 {
		spec["asNumber"] = p.ASNumber
	}
	if p.Password != nil {
		spec["password"] = obj{"secretKeyRef": obj{"name": p.Password.Name, "key": p.Password.Key}}
	}
	if len(p.Filters) > 0 {
		spec["filters"] = p.Filters
	}
	if p.MaxRestartTime != nil {
		spec["maxRestartTime"] = p.MaxRestartTime.String()
	}
	if p.TTLSecurity != 0 {
		spec["ttlSecurity"] = p.TTLSecurity
	}
	return object(calicoVersion, "BGPPeer", obj{"name": p.Name}, spec)
}

func secretDoc(s state.Secret, namespace string) any {
	data := obj{}
	for k, v := range s.Data {
		data[k] = v.Reveal()
	}
	return obj{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": obj{"name": s.Name, "namespace": namespace}, "stringData": data}
}
