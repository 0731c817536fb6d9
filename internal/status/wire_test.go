package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStatusWire: durations are float seconds named for their unit, a
// time that has not happened is left out, and the JSON reads back as it
// was written.
func TestStatusWire(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := Status{
		SchemaVersion: SchemaVersion, Ready: true, LastTick: t0,
		ControlAPI: APIStatus{PollInterval: 3 * time.Second, Timeout: 1500 * time.Millisecond, PollDuration: 25 * time.Millisecond, LastPoll: t0},
		Bird:       BirdStatus{Enabled: true, LastCheck: t0},
		VIPs: []VIPStatus{
			{Address: "10.0.0.100/32", Since: t0, Bird: &VIPConfirm{Agrees: true, Latency: 40 * time.Millisecond, CheckedAt: t0}},
			{Address: "10.0.0.101/32", Bird: &VIPConfirm{Agrees: false, DisagreeingSince: t0, CheckedAt: t0}},
		},
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	for _, want := range []string{`"schema_version":2`, `"poll_interval_seconds":3`, `"timeout_seconds":1.5`, `"poll_duration_seconds":0.025`,
		`"confirm_latency_seconds":0.04`, `"disagreeing_since":"2026-12-02T12:00:00Z"`, `"last_tick":"2026-12-02T12:00:00Z"`} {
		if !strings.Contains(body, want) {
			t.Errorf("JSON lacks %s:\n%s", want, body)
		}
	}
	for _, bad := range []string{"0001-01-01", "_ns", `"last_settled_poll"`, `"last_ok"`} {
		if strings.Contains(body, bad) {
			t.Errorf("JSON has %s:\n%s", bad, body)
		}
	}
	// Exactly one of the two VIPs has a disagreement, one a latency.
	if n := strings.Count(body, "disagreeing_since"); n != 1 {
		t.Errorf("disagreeing_since appears %d times, want 1", n)
	}
	if n := strings.Count(body, "confirm_latency_seconds"); n != 1 {
		t.Errorf("confirm_latency_seconds appears %d times, want 1", n)
	}
	var back Status
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
