package status

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
)

// fakeSink records the Events created; fail answers the n-th Create
// (from 0) with an error, when it returns one.
type fakeSink struct {
	mu     sync.Mutex
	tries  int
	events []corev1.Event
	fail   func(n int) error
	wrote  chan struct{}
}

func newFakeSink(fail func(int) error) *fakeSink {
	return &fakeSink{fail: fail, wrote: make(chan struct{}, 100)}
}

func (s *fakeSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.tries
	s.tries++
	if s.fail != nil {
		if err := s.fail(n); err != nil {
			return nil, err
		}
	}
	s.events = append(s.events, *ev)
	s.wrote <- struct{}{}
	return ev, nil
}

// The record.EventSink methods client-go's recorder needs besides Create.
func (s *fakeSink) Update(ev *corev1.Event) (*corev1.Event, error) { return ev, nil }
func (s *fakeSink) Patch(ev *corev1.Event, _ []byte) (*corev1.Event, error) {
	return ev, nil
}

func (s *fakeSink) written() (tries int, events []corev1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries, append([]corev1.Event(nil), s.events...)
}

func (s *fakeSink) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-s.wrote:
		case <-time.After(10 * time.Second):
			t.Fatalf("an Event was not written in 10 s")
		}
	}
}

// timeless is an Event without what depends on the moment it was made:
// the name's suffix (the time in nanoseconds) and the timestamps.
func timeless(ev corev1.Event) corev1.Event {
	ev.Name = ev.Name[:strings.LastIndexByte(ev.Name, '.')+1]
	ev.FirstTimestamp, ev.LastTimestamp = metav1.Time{}, metav1.Time{}
	return ev
}

// TestSinkRecorderWritesClientGosEvents: the Reporter's own recorder
// writes the Events client-go's recorder (k8s.io/client-go/tools/record)
// writes for the same calls, field by field, in the order made.
func TestSinkRecorderWritesClientGosEvents(t *testing.T) {
	source := corev1.EventSource{Component: "peeragent", Host: "node-a"}
	refs := []*corev1.ObjectReference{
		{APIVersion: "projectcalico.org/v3", Kind: "BGPPeer", Name: "tor"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "tor-md5"},
	}
	emit := func(rec Recorder) {
		rec.Event(refs[0], corev1.EventTypeWarning, ReasonProblem, "waiting for secret")
		rec.Event(refs[1], corev1.EventTypeWarning, ReasonProblem, "list forbidden")
		rec.Event(refs[0], corev1.EventTypeNormal, ReasonProblemCleared, "cleared: waiting for secret")
		rec.Event(refs[0], "Bogus", ReasonProblem, "an unsupported type is not sent")
	}
	ours := newFakeSink(nil)
	own := newSinkRecorder(ours, source, slog.New(slog.DiscardHandler))
	emit(own)
	own.shutdown()

	theirs := newFakeSink(nil)
	b := record.NewBroadcaster()
	b.StartRecordingToSink(theirs)
	emit(b.NewRecorder(runtime.NewScheme(), source))
	theirs.wait(t, 3)
	b.Shutdown()

	_, got := ours.written()
	_, want := theirs.written()
	if len(want) != 3 {
		t.Fatalf("client-go's recorder wrote %d Events, want 3", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("wrote %d Events, client-go's recorder %d", len(got), len(want))
	}
	for i := range got {
		if diff := cmp.Diff(timeless(want[i]), timeless(got[i])); diff != "" {
			t.Errorf("Event %d (-client-go's +ours):\n%s", i, diff)
		}
		if got[i].Namespace == "" || !strings.HasPrefix(got[i].Name, got[i].InvolvedObject.Name+".") ||
			got[i].FirstTimestamp.IsZero() || !got[i].FirstTimestamp.Equal(&got[i].LastTimestamp) {
			t.Errorf("Event %d: name %q namespace %q timestamps %v %v", i, got[i].Name, got[i].Namespace,
				got[i].FirstTimestamp, got[i].LastTimestamp)
		}
	}
}

// TestSinkRecorderRetries: an Event the server could not be reached for is
// tried again (up to maxTriesPerEvent), one the server refused is not, and
// shutdown writes what is queued.
func TestSinkRecorderRetries(t *testing.T) {
	wait := eventRetryWait
	eventRetryWait = time.Millisecond
	t.Cleanup(func() { eventRetryWait = wait })
	ref := &corev1.ObjectReference{APIVersion: "projectcalico.org/v3", Kind: "BGPPeer", Name: "tor"}
	log := slog.New(slog.DiscardHandler)

	unreachable := errors.New("dial tcp: connection refused")
	flaky := newFakeSink(func(n int) error {
		if n < 2 {
			return unreachable
		}
		return nil
	})
	rec := newSinkRecorder(flaky, corev1.EventSource{Component: "peeragent"}, log)
	rec.Event(ref, corev1.EventTypeWarning, ReasonProblem, "p")
	flaky.wait(t, 1)
	rec.shutdown()
	if tries, evs := flaky.written(); tries != 3 || len(evs) != 1 {
		t.Errorf("unreachable twice: %d tries, %d Events; want 3 tries, 1 Event", tries, len(evs))
	}

	refused := newFakeSink(func(n int) error {
		if n == 0 {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, "tor.1", nil)
		}
		return nil
	})
	rec = newSinkRecorder(refused, corev1.EventSource{Component: "peeragent"}, log)
	rec.Event(ref, corev1.EventTypeWarning, ReasonProblem, "refused")
	rec.Event(ref, corev1.EventTypeWarning, ReasonProblem, "next")
	rec.shutdown()
	if tries, evs := refused.written(); tries != 2 || len(evs) != 1 || evs[0].Message != "next" {
		t.Errorf("refused: %d tries, Events %+v; want 2 tries and the next Event only", tries, evs)
	}

	never := newFakeSink(func(int) error { return unreachable })
	rec = newSinkRecorder(never, corev1.EventSource{Component: "peeragent"}, log)
	rec.Event(ref, corev1.EventTypeWarning, ReasonProblem, "p")
	deadline := time.Now().Add(10 * time.Second)
	for tries, _ := never.written(); tries < maxTriesPerEvent; tries, _ = never.written() {
		if time.Now().After(deadline) {
			t.Fatalf("%d tries in 10 s, want %d", tries, maxTriesPerEvent)
		}
		time.Sleep(time.Millisecond) // polling the fake's count, bounded by the deadline
	}
	rec.shutdown()
	if tries, _ := never.written(); tries != maxTriesPerEvent {
		t.Errorf("never reachable: %d tries, want %d", tries, maxTriesPerEvent)
	}
}
