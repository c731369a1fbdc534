package process

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); run go test -update if the change is intended:\n%s", path, diff)
	}
}

func TestStepTypesGolden(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(StepTypes()); err != nil {
		t.Fatal(err)
	}
	golden(t, "step_types.golden", out.Bytes())
}

func TestStepTypesRegistry(t *testing.T) {
	t.Parallel()
	want := []string{"intake", "validate", "route", "consolidate", "analyse", "draft", "monitor", "follow_up", "execute", "human_task", "wait"}
	if diff := cmp.Diff(want, StepTypeNames()); diff != "" {
		t.Errorf("step types (-want +got):\n%s", diff)
	}
	for _, st := range StepTypes() {
		got, ok := LookupStepType(st.Type)
		if !ok || got.Type != st.Type || got.Label == "" || got.Description == "" {
			t.Errorf("LookupStepType(%s) = %+v, %v", st.Type, got, ok)
		}
		var schema map[string]any
		if err := json.Unmarshal(st.ConfigSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: config schema %s is not an object schema (%v)", st.Type, st.ConfigSchema, err)
		}
		if _, err := st.DecodeConfig(nil); err != nil {
			t.Errorf("%s: decode an empty config: %v", st.Type, err)
		}
	}
	if _, ok := LookupStepType("teleport"); ok {
		t.Error("LookupStepType(teleport) found a type")
	}
	// StepTypes returns a copy: changing it does not change the registry.
	list := StepTypes()
	list[0].Label = "changed"
	if st, _ := LookupStepType(list[0].Type); st.Label == "changed" {
		t.Error("StepTypes shares the registry")
	}
}

func TestNeeds(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		step Step
		want []string
	}{
		{Step{Type: StepIntake, Config: json.RawMessage(`{"document_id": "${trigger.data.document_id}"}`)}, []string{CapDocumentExtract}},
		{Step{Type: StepIntake, Config: json.RawMessage(`{"text": "x"}`)}, nil},
		{Step{Type: StepIntake, Capability: "ocr.read", Config: json.RawMessage(`{"document_id": "d"}`)}, []string{"ocr.read"}},
		{Step{Type: StepFollowUp}, []string{CapEmailSend}},
		{Step{Type: StepFollowUp, Capability: "sms.send"}, []string{"sms.send"}},
		{Step{Type: StepExecute, Capability: "payments.pay"}, []string{"payments.pay"}},
		{Step{Type: StepHumanTask}, nil},
		{Step{Type: StepDraft}, nil},
		{Step{Type: StepWait}, nil},
		{Step{Type: StepMonitor, Capability: "erp.order.get"}, []string{"erp.order.get"}},
	} {
		st, _ := LookupStepType(test.step.Type)
		if diff := cmp.Diff(test.want, st.Needs(test.step)); diff != "" {
			t.Errorf("Needs(%+v) (-want +got):\n%s", test.step, diff)
		}
	}
	d := &Definition{Steps: []Step{
		{Type: StepFollowUp}, {Type: StepExecute, Capability: "payments.pay"}, {Type: StepFollowUp}, {Type: StepHumanTask},
	}}
	if diff := cmp.Diff([]string{CapEmailSend, "payments.pay"}, d.Needs()); diff != "" {
		t.Errorf("Definition.Needs (-want +got):\n%s", diff)
	}
}

func TestNewStepRegistryRefuses(t *testing.T) {
	t.Parallel()
	shout := func() StepType {
		return Define(StepDef[struct {
			Text string `json:"text"`
		}]{Type: "shout", Eval: func(*struct {
			Text string `json:"text"`
		}, map[string]any) (any, error) {
			return nil, nil
		}})
	}
	for _, test := range []struct {
		name  string
		types []StepType
		want  string
	}{
		{"twice", []StepType{shout(), shout()}, `step type "shout" is defined twice`},
		{"not defined", []StepType{{Type: "bare"}}, `step type "bare": not made by Define`},
		{"a built-in twice", append(StepTypes(), intakeStep()), `step type "intake" is defined twice`},
	} {
		t.Run(test.name, func(t *testing.T) {
			if _, err := NewStepRegistry(test.types...); err == nil || err.Error() != test.want {
				t.Errorf("NewStepRegistry: %v, want %s", err, test.want)
			}
		})
	}
	r, err := NewStepRegistry(shout())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"shout"}, r.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if _, err := r.Eval("shout", map[string]any{"text": "hi"}, nil); err != nil {
		t.Errorf("Eval: %v", err)
	}
	if _, err := r.Eval("intake", map[string]any{}, nil); err == nil {
		t.Error("Eval of a type the registry lacks: no error")
	}
}
