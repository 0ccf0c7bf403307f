package status

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"time"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/peeragent/peeragent/state"
)

// Pacing of CalicoNodeStatus writes: Calico's default update period, used
// as the minimum time between two writes of one object, and the delay
// before a failed write is tried again.
const (
	defaultUpdatePeriod = 10 * time.Second
	writeRetry          = 5 * time.Second
)

// nodeStatuses writes this node's CalicoNodeStatus objects.
type nodeStatuses struct {
	client  dynamic.NamespaceableResourceInterface
	store   cache.Store
	node    string
	version string
	log     *slog.Logger
	// written: when each object (by name) was last written or failed.
	written map[string]time.Time
	// noStatusSubresource: the server has no status subresource (Calico's
	// CRDs), so the status is written with the object.
	noStatusSubresource bool
}

// write brings every CalicoNodeStatus of this node up to s, each at most
// once per its update period (spec.updatePeriodSeconds; 0 stops its
// updates, as in Calico); it returns when one held back is next due.
func (n *nodeStatuses) write(ctx context.Context, now time.Time, s state.State) time.Time {
	var next time.Time
	for _, o := range n.store.List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var cns v3.CalicoNodeStatus
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cns); err != nil || cns.Spec.Node != n.node {
			continue
		}
		period := defaultUpdatePeriod
		if p := cns.Spec.UpdatePeriodSeconds; p != nil {
			if *p == 0 {
				continue
			}
			period = time.Duration(*p) * time.Second
		}
		want := Desired(s, cns.Spec.Classes, n.version)
		// A status never written is written even when all zero: its
		// lastUpdated shows that the agent reports.
		if _, has := u.Object["status"]; has && sameStatus(want, cns.Status) {
			continue
		}
		if due := n.written[u.GetName()].Add(period); now.Before(due) {
			next = earliest(next, due)
			continue
		}
		n.written[u.GetName()] = now
		want.LastUpdated = metav1.NewTime(now)
		if err := n.update(ctx, u, want); err != nil {
			n.log.Warn("CalicoNodeStatus not written", "name", u.GetName(), "error", err)
			next = earliest(next, now.Add(writeRetry))
		}
	}
	for name := range n.written { // forget deleted objects
		if _, ok, _ := n.store.GetByKey(name); !ok {
			delete(n.written, name)
		}
	}
	return next
}

// update writes the status, through the status subresource when the
// server has one; a conflict is left to the watch, which brings the
// newer object and another write.
func (n *nodeStatuses) update(ctx context.Context, u *unstructured.Unstructured, want v3.CalicoNodeStatusStatus) error {
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
	if err != nil {
		return err
	}
	obj := u.DeepCopy()
	obj.Object["status"] = st
	if !n.noStatusSubresource {
		_, err = n.client.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		if !apierrors.IsNotFound(err) {
			return ignoreConflict(err)
		}
	}
	// No status subresource, or the object is gone (then this fails too).
	if _, err = n.client.Update(ctx, obj, metav1.UpdateOptions{}); err == nil {
		n.noStatusSubresource = true
	}
	return ignoreConflict(err)
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// sameStatus compares two statuses lastUpdated aside, in their JSON form
// (so an absent list and an empty one are the same).
func sameStatus(a, b v3.CalicoNodeStatusStatus) bool {
	a.LastUpdated, b.LastUpdated = metav1.Time{}, metav1.Time{}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
