package watch

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/peeragent/peeragent/state"
)

func secretNamed(name string) func(state.SecretUpserted) bool {
	return func(a state.SecretUpserted) bool { return a.Secret.Name == name }
}

func secretGone(name string) func(state.SecretDeleted) bool {
	return func(a state.SecretDeleted) bool { return a.Name == name }
}

// mentionsSecret reports whether an action is about the Secret name.
func mentionsSecret(a state.Action, name string) bool {
	switch a := a.(type) {
	case state.SecretUpserted:
		return a.Secret.Name == name
	case state.SecretDeleted:
		return a.Name == name
	case state.InputProblemsReported:
		return strings.HasSuffix(a.Source, "/"+name)
	}
	return false
}

// Watch before Run: absent gives SecretDeleted (fail closed); then
// create, a metadata-only update (nothing), a data update, delete; other
// Secrets are ignored; Watch during Run; Unwatch silences the name.
func TestKubeSecretWatch(t *testing.T) {
	f := newKubeFakes([]runtime.Object{testSecret("other", "1", map[string]string{"k": "x"}), testSecret("late", "1", map[string]string{"k": "l"})})
	secrets := f.client.CoreV1().Secrets(testNS)
	k, rec := startKube(t, f, GroupCRD, func(k *Kube) { k.Watch("pw"); k.Watch("pw") })
	_, at := nextAction(t, rec, 0, "pw absent", secretGone("pw"))
	f.opened.wait(t, 1, "secrets")

	mustCall(t)(secrets.Create(bgCtx(), testSecret("pw", "1", map[string]string{"key": "v1"}), metav1.CreateOptions{}))
	up, at := nextAction(t, rec, at, "pw created", secretNamed("pw"))
	if got := up.Secret.Data["key"].Reveal(); got != "v1" {
		t.Errorf("pw key = %q, want v1", got)
	}
	meta := testSecret("pw", "2", map[string]string{"key": "v1"})
	meta.Labels = map[string]string{"touched": "yes"}
	mustCall(t)(secrets.Update(bgCtx(), meta, metav1.UpdateOptions{}))
	mustCall(t)(secrets.Update(bgCtx(), testSecret("other", "2", map[string]string{"k": "y"}), metav1.UpdateOptions{}))
	mustCall(t)(secrets.Update(bgCtx(), testSecret("pw", "3", map[string]string{"key": "v2"}), metav1.UpdateOptions{}))
	up, at = nextAction[state.SecretUpserted](t, rec, at, "pw rotated", nil)
	if up.Secret.Name != "pw" || up.Secret.Data["key"].Reveal() != "v2" {
		t.Errorf("first testSecret action after the metadata-only update = %+v, want pw rotated to v2", up)
	}
	mustCall(t)(nil, secrets.Delete(bgCtx(), "pw", metav1.DeleteOptions{}))
	_, at = nextAction(t, rec, at, "pw deleted", secretGone("pw"))

	k.Watch("late")
	nextAction(t, rec, at, "late listed", secretNamed("late"))
	checkUnwatch(t, f, k, rec)
}

// checkUnwatch: Unwatch (twice) forgets the Secret once; after it, changes
// to the Secret dispatch nothing, while a watch started afterwards still works.
func checkUnwatch(t *testing.T, f kubeFakes, k *Kube, rec *actionRecorder) {
	t.Helper()
	secrets := f.client.CoreV1().Secrets(testNS)
	k.Unwatch("pw")
	k.Unwatch("pw")
	at := rec.mark()
	mustCall(t)(secrets.Create(bgCtx(), testSecret("pw", "4", map[string]string{"key": "v3"}), metav1.CreateOptions{}))
	mustCall(t)(secrets.Update(bgCtx(), testSecret("pw", "5", map[string]string{"key": "v4"}), metav1.UpdateOptions{}))
	mustCall(t)(nil, secrets.Delete(bgCtx(), "pw", metav1.DeleteOptions{}))
	k.Watch("sentinel")
	nextAction(t, rec, at, "sentinel absent", secretGone("sentinel"))
	for _, a := range rec.since(at) {
		if mentionsSecret(a, "pw") {
			t.Errorf("after Unwatch: %s %+v", a.ActionName(), a)
		}
	}
	initial := 0
	for _, a := range rec.since(0) {
		if d, ok := a.(state.SecretDeleted); ok && d.Name == "pw" {
			initial++
		}
	}
	// The first list, the delete, and the forget on Unwatch (the State must
	// not keep a value it no longer watches); Watch twice started one watch.
	if initial != 3 {
		t.Errorf("pw deleted %d times, want 3", initial)
	}
}

// forbidSecrets makes listing Secrets fail with 403 while forbid is set
// and signals each refused call.
func forbidSecrets(f kubeFakes, forbid *atomic.Bool) <-chan struct{} {
	refused := make(chan struct{}, 64)
	f.client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !forbid.Load() {
			return false, nil, nil
		}
		select {
		case refused <- struct{}{}:
		default:
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "",
			errors.New(`User "system:serviceaccount:x:agent" cannot list resource "secrets"`))
	})
	return refused
}

// A 403 on a Secret is one problem (not one per retry), cleared when
// access returns or when the Secret is no longer watched.
func TestKubeSecretForbidden(t *testing.T) {
	obj := "secret/" + testNS + "/pw"
	cases := []struct {
		name  string
		then  func(k *Kube, forbid *atomic.Bool)
		after []state.Action
	}{
		{name: "forbidden-then-allowed", then: func(_ *Kube, forbid *atomic.Bool) { forbid.Store(false) },
			after: []state.Action{state.InputProblemsReported{Source: obj}, state.SecretDeleted{Name: "pw"}}},
		{name: "forbidden-then-unwatched", then: func(k *Kube, _ *atomic.Bool) { k.Unwatch("pw") },
			after: []state.Action{state.InputProblemsReported{Source: obj}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newKubeFakes(nil)
			var forbid atomic.Bool
			forbid.Store(true)
			refused := forbidSecrets(f, &forbid)
			k, rec := startKube(t, f, GroupCRD, func(k *Kube) { k.Watch("pw") })
			prob, at := nextAction(t, rec, 0, "problem", problemOf(obj))
			// The reason names the grant that is missing (one Secret name,
			// in the agent's namespace) and keeps the server's message.
			grant := `forbidden: grant get, list, watch of secrets resourceNames ["pw"] in namespace "` + testNS + `"`
			if len(prob.Problems) != 1 || prob.Problems[0].Object != obj ||
				!strings.HasPrefix(prob.Problems[0].Reason, grant) ||
				!strings.Contains(prob.Problems[0].Reason, `cannot list resource "secrets"`) {
				t.Fatalf("problem = %+v, want a reason starting %q", prob, grant)
			}
			at = max(at, waitLists(t, rec))
			for range 3 { // retries, with backoff, report nothing new
				select {
				case <-refused:
				case <-time.After(10 * time.Second):
					t.Fatal("the runner stopped retrying")
				}
			}
			tc.then(k, &forbid)
			end := expectActions(t, rec, at, tc.after)
			reports := 0
			for _, a := range rec.since(0)[:end] {
				if p, ok := a.(state.InputProblemsReported); ok && len(p.Problems) > 0 {
					reports++
				}
			}
			if reports != 1 {
				t.Errorf("%d problem reports, want 1", reports)
			}
		})
	}
}
