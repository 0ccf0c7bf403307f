package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/peeragent/peeragent/state"
)

// The API groups Calico's BGP objects are served from, and the flag value
// that picks between them at start.
const (
	GroupCRD  = "crd.projectcalico.org/v1"
	GroupV3   = "projectcalico.org/v3"
	GroupAuto = "auto"
)

// KubeConfig is what the Kubernetes source needs.
type KubeConfig struct {
	Client  Client // TypedClient in the agent
	Dynamic dynamic.Interface
	// Group is GroupCRD (default when empty) or GroupV3: the caller
	// resolves the flag GroupAuto with ResolveGroup first, and shares the
	// result with whatever else reads the group (cmd/peeragent's status
	// reporter).
	Group     string
	Namespace string       // where password Secrets live
	Node      string       // this node: its BlockAffinities and Pods only
	Log       *slog.Logger // nil: slog.Default()
}

// Kube is the Kubernetes source: a reflector per kind (BGPPeer,
// BGPConfiguration, BGPFilter, Node, BlockAffinity, IPPool, and this
// node's Pods; docs/routes.md "Amendment to §1") feeding a store that turns every
// (re)list into one SourceSynced and every watch event into an upsert or a
// delete, plus one watch per referenced Secret name.
type Kube struct {
	cfg     KubeConfig
	log     *slog.Logger
	backoff *wait.Backoff // nil: client-go's default; tests shorten it

	mu      sync.Mutex
	run     *runScope               // set while Run runs
	secrets map[string]*secretWatch // wanted names, started while Run runs
	svc     serviceWatch            // docs/routes.md §8.4: started while wanted and Run runs
}

// runScope is what a running Run lends to watches started later.
type runScope struct {
	ctx      context.Context
	dispatch func(state.Action)
	wg       *sync.WaitGroup
}

// NewKube checks cfg; nothing talks to the API server before Run.
func NewKube(cfg KubeConfig) (*Kube, error) {
	if cfg.Client == nil || cfg.Dynamic == nil {
		return nil, errors.New("kube source: a typed and a dynamic client are required")
	}
	if cfg.Node == "" {
		return nil, errors.New("kube source: the node name is required")
	}
	if cfg.Group == "" {
		cfg.Group = GroupCRD
	}
	switch cfg.Group {
	case GroupCRD, GroupV3:
	case GroupAuto:
		return nil, errors.New("kube source: API group auto: resolve it with ResolveGroup first")
	default:
		return nil, fmt.Errorf("kube source: unknown API group %q (want %s or %s)", cfg.Group, GroupCRD, GroupV3)
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Kube{cfg: cfg, log: log, secrets: map[string]*secretWatch{}}, nil
}

// Run lists and watches every kind and the wanted Secrets, handing what it
// sees to dispatch, until ctx ends. It returns nil once ctx ends and every reflector has stopped. dispatch must
// not block for long and must not call back into Watch or Unwatch
// synchronously: it is called with a store's lock held, which is what
// guarantees that nothing of a secret arrives after Unwatch returns.
func (k *Kube) Run(ctx context.Context, dispatch func(state.Action)) error {
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(k.log.Handler()))
	group := k.cfg.Group
	gv, err := schema.ParseGroupVersion(group)
	if err != nil {
		return fmt.Errorf("kube source: %w", err)
	}
	var wg sync.WaitGroup
	if err := k.begin(&runScope{ctx: ctx, dispatch: dispatch, wg: &wg}); err != nil {
		return err
	}
	k.log.Info("kube source started", "group", group, "namespace", k.cfg.Namespace)
	for _, s := range k.sources(gv, dispatch) {
		wg.Go(func() { s.RunWithContext(ctx) })
	}
	<-ctx.Done()
	k.end()
	wg.Wait()
	return nil
}

// begin records the running scope and starts the secret watches wanted so far.
func (k *Kube) begin(rs *runScope) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.run != nil {
		return errors.New("kube source: Run is already running")
	}
	k.run = rs
	for _, w := range k.secrets {
		k.startSecret(w)
	}
	if k.svc.wanted {
		k.startServices()
	}
	return nil
}

// end forgets the running scope and stops the secret watches; the names
// stay wanted, so a later Run starts them again.
func (k *Kube) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.run = nil
	for _, w := range k.secrets {
		w.stop()
	}
	k.svc.stop()
}

// ResolveGroup turns the group flag into the group-version to read
// BGPPeers, BGPConfigurations and BGPFilters from (docs/semantics.md §1): empty
// means GroupCRD; GroupAuto picks GroupV3 only when the server has the
// projectcalico.org group and not crd.projectcalico.org, else GroupCRD.
func ResolveGroup(d GroupLister, flag string) (string, error) {
	switch flag {
	case "", GroupCRD:
		return GroupCRD, nil
	case GroupV3:
		return GroupV3, nil
	case GroupAuto:
	default:
		return "", fmt.Errorf("unknown API group %q (want %s, %s or %s)", flag, GroupCRD, GroupV3, GroupAuto)
	}
	if d == nil {
		return "", errors.New("group auto needs a discovery client")
	}
	list, err := d.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("discover API groups: %w", err)
	}
	has := map[string]bool{}
	for _, g := range list.Groups {
		has[g.Name] = true
	}
	if has["projectcalico.org"] && !has["crd.projectcalico.org"] {
		return GroupV3, nil
	}
	return GroupCRD, nil
}

// GroupLister lists the server's API groups: TypedClient, or client-go's
// discovery client.
type GroupLister interface {
	ServerGroups() (*metav1.APIGroupList, error)
}

// RESTConfig is the in-cluster config when kubeconfig is empty, else the
// one that file describes.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return c, nil
}
