package golden

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// Initial is the optional initial.yaml of a scenario.
type Initial struct {
	Node    string            `json:"node"`
	Options state.Options     `json:"options"`
	Setup   []json.RawMessage `json:"setup"`
}

// Scenario is a parsed scenario: where it starts and what happens.
type Scenario struct {
	Initial Initial
	Setup   []state.Action
	Actions []state.Action
}

// Parse reads the initial.yaml and actions.yaml sections.
func Parse(initial, actions []byte) (*Scenario, error) {
	sc := &Scenario{Initial: Initial{Node: "node-a"}}
	if len(initial) > 0 {
		if err := yaml.UnmarshalStrict(initial, &sc.Initial); err != nil {
			return nil, fmt.Errorf("initial.yaml: %w", err)
		}
	}
	var err error
	if sc.Setup, err = decodeActions(sc.Initial.Setup); err != nil {
		return nil, fmt.Errorf("initial.yaml setup: %w", err)
	}
	var raw []json.RawMessage
	if err := yaml.Unmarshal(actions, &raw); err != nil {
		return nil, fmt.Errorf("actions.yaml: %w", err)
	}
	if sc.Actions, err = decodeActions(raw); err != nil {
		return nil, fmt.Errorf("actions.yaml: %w", err)
	}
	return sc, nil
}

func decodeActions(raw []json.RawMessage) ([]state.Action, error) {
	out := make([]state.Action, 0, len(raw))
	for i, r := range raw {
		a, err := state.DecodeAction(r)
		if err != nil {
			return nil, fmt.Errorf("action %d: %w", i+1, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// Step is what one action did.
type Step struct {
	Action  state.Action
	Effects []effects.Effect
}

// Run plays the scenario, calling check(prev, next) around every Reduce
// (the runner's purity checks hook in there).
func (sc *Scenario) Run(check func(before string, prev state.State, a state.Action)) (state.State, []Step) {
	s := state.New(sc.Initial.Node, sc.Initial.Options)
	for _, a := range sc.Setup {
		s = reducer.Reduce(s, a)
	}
	var steps []Step
	for _, a := range sc.Actions {
		before := DumpYAML(s)
		next := reducer.Reduce(s, a)
		if check != nil {
			check(before, s, a)
		}
		steps = append(steps, Step{Action: a, Effects: effects.Diff(s, next)})
		s = next
	}
	return s, steps
}

// DumpYAML is the State as want-state.yaml holds it.
func DumpYAML(s state.State) string {
	b, err := yaml.Marshal(s.Dump())
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// EffectsText is want-effects.txt: per step a header and its effects.
func EffectsText(steps []Step) string {
	var b strings.Builder
	for i, st := range steps {
		fmt.Fprintf(&b, "# %d %s\n", i+1, Describe(st.Action))
		if len(st.Effects) == 0 {
			b.WriteString("(none)\n")
		}
		for _, e := range st.Effects {
			b.WriteString(e.String() + "\n")
		}
	}
	return b.String()
}

// Describe names an action and its object in a few words: an input
// object by its key (state.InputKinds).
func Describe(a state.Action) string {
	id := ""
	if in := state.InputOf(a); in != nil {
		id, _ = in.ActionKey(a)
	}
	switch a := a.(type) {
	case state.SourceSynced:
		id = string(a.Kind)
	case state.PeerApplied, state.PeerApplyFailed, state.TableRouteApplied, state.TableRouteApplyFailed,
		state.PathApplied, state.PathApplyFailed:
		v := reflect.ValueOf(a) // a result: its Address or Prefix first, and its Gen
		id = fmt.Sprintf("%v gen=%d", v.Field(0).Interface(), v.FieldByName("Gen").Uint())
	case state.RoutesListed:
		id = a.Dataplane
	case state.BestPathsChanged:
		id = fmt.Sprintf("gen=%d", a.Gen)
		if a.Init {
			id += " init"
		}
	case state.EndOfRIBReceived:
		id = fmt.Sprintf("%s %s gen=%d", a.Neighbor, a.Family, a.Gen)
	case state.Tick:
		id = a.At.UTC().Format(time.RFC3339Nano)
	case state.RoutesRescanned:
		id = fmt.Sprintf("seq=%d %s", a.Seq, a.Dataplane)
	case state.SessionStateChanged:
		id = fmt.Sprintf("%s %s", a.Address, a.State)
	case state.InputProblemsReported:
		id = a.Source
	}
	return strings.TrimSpace(a.ActionName() + " " + id)
}
