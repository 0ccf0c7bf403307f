package watch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/peeragent/peeragent/state"
)

// secretWatch is one wanted Secret name; cancel and store are set while
// its reflector runs.
type secretWatch struct {
	name   string
	cancel context.CancelFunc
	store  *kindStore[state.Secret]
}

// Watch starts watching the Secret name in the agent's namespace (a list
// and watch with the field selector metadata.name=NAME). Its first list
// gives SecretUpserted, or SecretDeleted when the Secret does not exist, so
// a neighbor waiting for it stays held back. Idempotent; safe before Run
// (the watch starts with Run) and from any goroutine.
func (k *Kube) Watch(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.secrets[name]; ok {
		return
	}
	w := &secretWatch{name: name}
	k.secrets[name] = w
	k.log.Debug("secret watch wanted", "secret", k.cfg.Namespace+"/"+name)
	if k.run != nil {
		k.startSecret(w)
	}
}

// Unwatch stops the watch of the Secret name: once it returns, nothing
// more is dispatched for it (a reported 403 problem is cleared first).
// Idempotent; safe before Run and from any goroutine.
func (k *Kube) Unwatch(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w, ok := k.secrets[name]; ok {
		delete(k.secrets, name)
		w.stop()
		k.log.Debug("secret watch stopped", "secret", k.cfg.Namespace+"/"+name)
		if k.run != nil {
			// What is no longer watched is no longer known: forget it, so
			// that a later reference waits for a fresh read (fail closed)
			// instead of using a value that may have changed meanwhile.
			k.run.dispatch(state.SecretDeleted{Name: name})
		}
	}
}

// startSecret runs the reflector of w under the running scope; k.mu is held.
func (k *Kube) startSecret(w *secretWatch) {
	ctx, cancel := context.WithCancel(k.run.ctx)
	w.cancel = cancel
	w.store = newKindStore(secretCodec(k.cfg.Namespace, w.name), k.run.dispatch, k.log)
	secrets := k.cfg.Client.Secrets(k.cfg.Namespace)
	selector := fields.OneTermEqualSelector("metadata.name", w.name).String()
	lw := &observedLW{client: k.cfg.Client, observe: w.store.observe,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return secrets.List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			o.FieldSelector = selector
			return secrets.Watch(ctx, o)
		}}
	r := k.reflector("secret/"+w.name, lw, &corev1.Secret{}, w.store)
	k.run.wg.Go(func() { r.RunWithContext(ctx) })
}

// stop ends the reflector, if running, and silences its store.
func (w *secretWatch) stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.store.stop()
	w.cancel, w.store = nil, nil
}

// secretCodec: one Secret, by name. A complete list holds it or not, so
// it becomes SecretUpserted or SecretDeleted, never a SourceSynced (which
// would replace every other Secret).
func secretCodec(ns, name string) kindCodec[state.Secret] {
	obj := "secret/" + ns + "/" + name
	return kindCodec[state.Secret]{
		object: func(string) string { return obj }, listProblem: obj,
		forbidden: func(err error) string { return SecretForbidden(ns, name, err) },
		accept:    func(n string) bool { return n == name },
		decode: func(o any) (state.Secret, error) {
			s, ok := o.(*corev1.Secret)
			if !ok {
				return state.Secret{}, fmt.Errorf("not a Secret: %T", o)
			}
			return Secret(s), nil
		},
		upsert: func(v state.Secret) state.Action { return state.SecretUpserted{Secret: v} },
		remove: func(n string) state.Action { return state.SecretDeleted{Name: n} },
		synced: func(vs []state.Secret) []state.Action {
			if len(vs) == 0 {
				return []state.Action{state.SecretDeleted{Name: name}}
			}
			return []state.Action{state.SecretUpserted{Secret: vs[0]}}
		},
	}
}

// SecretForbidden is the problem reason of a Secret the agent may not
// read: the grant it lacks, in the form of the Role `peeragent rbac` prints
// (get, list and watch of that one name, since the agent lists and watches
// it with the field selector metadata.name=NAME), then the API server's
// message. It quotes no Secret data: a 403 carries none.
func SecretForbidden(ns, name string, err error) string {
	return fmt.Sprintf("forbidden: grant get, list, watch of secrets resourceNames [%q] in namespace %q "+
		"to the agent's ServiceAccount (`peeragent rbac` prints the Role for every Secret referenced): %v", name, ns, err)
}
