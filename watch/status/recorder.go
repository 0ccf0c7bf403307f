package status

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Recorder is what the Reporter's Events go through: one Event on the
// object an *corev1.ObjectReference names. client-go's
// record.EventRecorder has this method (tests use its FakeRecorder); the
// agent's is the Reporter's own, over Config.Events.
type Recorder interface {
	Event(object runtime.Object, eventtype, reason, message string)
}

// EventSink is where the Reporter's own recorder writes Events, in the
// event's namespace: watch.TypedClient's Events(), or client-go's
// typed EventSinkImpl.
type EventSink interface {
	Create(event *corev1.Event) (*corev1.Event, error)
}

// The bounds of client-go's recorder (k8s.io/client-go/tools/record),
// kept: Events queued before the oldest is dropped, tries per Event, and
// the wait between two tries (the first randomized).
const (
	maxQueuedEvents  = 1000
	maxTriesPerEvent = 12
)

var eventRetryWait = 10 * time.Second

// sinkRecorder is the Reporter's own recorder: the Events client-go's
// recorder makes (name, timestamps, count 1, source and reporting
// controller), written by one goroutine in the order made, retried
// while the API server cannot be reached, dropped when it refuses one.
// client-go's recorder also correlates Events (aggregating similar ones
// and counting repeats with a strategic-merge patch); the eventLog makes
// at most one batch of Events per object and interval, so there is
// nothing to correlate, and the recorder and its patch machinery would
// link kube-openapi and the OpenAPI models (docs/performance.md "What the
// binary maps").
type sinkRecorder struct {
	sink   EventSink
	source corev1.EventSource
	log    *slog.Logger
	now    func() time.Time
	queue  chan *corev1.Event
	stop   chan struct{} // closed: no more waiting between tries
	done   chan struct{} // closed when the writer has returned
}

func newSinkRecorder(sink EventSink, source corev1.EventSource, log *slog.Logger) *sinkRecorder {
	r := &sinkRecorder{sink: sink, source: source, log: log, now: time.Now,
		queue: make(chan *corev1.Event, maxQueuedEvents), stop: make(chan struct{}), done: make(chan struct{})}
	go r.write()
	return r
}

// Event implements Recorder: it queues the Event, never blocking; object
// must be an *corev1.ObjectReference (what the eventLog passes).
func (r *sinkRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	ref, ok := object.(*corev1.ObjectReference)
	if !ok {
		r.log.Error("status reporter: an Event on an object that is not a reference", "type", fmt.Sprintf("%T", object))
		return
	}
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		r.log.Error("status reporter: unsupported Event type", "type", eventtype)
		return
	}
	ev := makeEvent(ref, r.source, r.now(), eventtype, reason, message)
	select {
	case r.queue <- ev:
	default:
		r.log.Error("status reporter: too many queued Events, dropped one", "object", ref.Kind+"/"+ref.Name, "reason", reason)
	}
}

// makeEvent is the Event client-go's recorder makes: named after the
// object and the time, in the object's namespace (default for a
// cluster-scoped object).
func makeEvent(ref *corev1.ObjectReference, source corev1.EventSource, now time.Time, eventtype, reason, message string) *corev1.Event {
	t := metav1.Time{Time: now}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	name := fmt.Sprintf("%s.%x", ref.Name, now.UnixNano())
	if len(name) > 253 { // a DNS subdomain; client-go takes a random UUID instead
		name = fmt.Sprintf("%s.%x", source.Component, now.UnixNano())
	}
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: *ref, Reason: reason, Message: message,
		FirstTimestamp: t, LastTimestamp: t, Count: 1, Type: eventtype, Source: source,
		ReportingController: source.Component, ReportingInstance: source.Host,
	}
}

// write sends the queued Events until shutdown closes the queue.
func (r *sinkRecorder) write() {
	defer close(r.done)
	for ev := range r.queue {
		r.send(ev)
	}
}

// send writes one Event: tried up to maxTriesPerEvent times while the
// server cannot be reached (one try each once shut down), dropped when
// the server refuses it or the request cannot be made.
func (r *sinkRecorder) send(ev *corev1.Event) {
	for try := 1; ; try++ {
		_, err := r.sink.Create(ev)
		if err == nil {
			return
		}
		var status apierrors.APIStatus
		var construct *rest.RequestConstructionError
		if errors.As(err, &status) || errors.As(err, &construct) {
			if !apierrors.IsAlreadyExists(err) {
				r.log.Error("status reporter: Event refused, not retried", "object", ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name,
					"reason", ev.Reason, "error", err)
			}
			return
		}
		if try >= maxTriesPerEvent {
			r.log.Error("status reporter: Event not written, retry limit reached", "object", ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name,
				"reason", ev.Reason, "error", err)
			return
		}
		wait := eventRetryWait
		if try == 1 {
			wait = time.Duration(rand.Float64() * float64(wait))
		}
		t := time.NewTimer(wait)
		select {
		case <-r.stop:
			t.Stop()
			r.log.Error("status reporter: Event not written, shutting down", "object", ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name,
				"reason", ev.Reason, "error", err)
			return
		case <-t.C:
		}
	}
}

// shutdown writes what is queued (each Event tried once more at most
// after a failure) and returns when the writer has.
func (r *sinkRecorder) shutdown() {
	close(r.stop)
	close(r.queue)
	<-r.done
}
