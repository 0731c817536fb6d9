package status

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// full is a Status with every field set, so that its JSON shows every
// key the /status body can have, in order.
func full() Status {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	return Status{
		SchemaVersion: SchemaVersion, Ready: true, DryRun: true, LastTick: t0,
		Interface: InterfaceStatus{
			Name: "rhi0", Exists: true, Up: true, Error: "address add: file exists",
			WriteErrors: 7, FailedWrites: 2, Foreign: []string{"10.9.0.1 peer 10.9.0.2/32"},
			Withdrawing: []string{"10.0.0.9/32"}, Unmanaged: []string{"10.0.0.8/32"},
			RecordError: "state file: read-only file system",
		},
		ControlAPI: APIStatus{
			URL: "http://127.0.0.1:9090", PollInterval: 3 * time.Second, Timeout: 1500 * time.Millisecond,
			LastPoll: t0, PollDuration: 25 * time.Millisecond, Upstreams: 12, Unreadable: 1,
			ConsecutiveFailedPolls: 1, Polls: 42, FailedPolls: 2, MaxFailedPolls: 3,
			LastSettled: t0.Add(-3 * time.Second), UnsettledPolls: 1,
			Polling: PollingStatus{
				EffectiveInterval: 6 * time.Second, StretchedSince: t0.Add(-time.Minute),
				FastInterval: 250 * time.Millisecond, Moving: 2, FastPolls: 17, BudgetPercent: 5,
				PollCost: 40 * time.Millisecond, CostTotal: 90 * time.Second, ListEntries: 12,
			},
		},
		Bird: BirdStatus{
			Enabled: true, Socket: "/run/bird/bird.ctl", LastCheck: t0, LastOK: t0.Add(-time.Second),
			Error: "dial unix /run/bird/bird.ctl: connection refused",
			Protocols: []router.ProtocolState{{Name: "peer_4", State: "up", BGPState: "Established",
				Info: "Socket: Connection refused", Established: true, Problem: "no IPv6 channel"}},
			Problems: []string{"peer_6 is not Established"}, Agree: 1, Disagree: 1,
		},
		Drain: DrainStatus{File: "/etc/rhi/drain", All: true, Count: 1, Error: "drain file: line 3: bad address"},
		FailOpen: &FailOpenStatus{
			MinOtherSites: 2, HoldSeconds: 30, Known: true, Error: "show route: timeout",
			LastAnswer: t0, LastResortInterface: "rhi-lr", LastResortExists: true,
		},
		Reload: ReloadStatus{Generation: 3, InProgress: true, AppliedGeneration: 2, LastAt: t0, LastError: "line 4: vips[0].address: \"x\": not an address"},
		VIPs: []VIPStatus{{
			Address: "10.0.0.100/32", Description: "api", Condition: "all",
			Verdict: decide.Available, Reason: decide.ReasonHealthy, Desired: true, Drained: true,
			DrainPhase: "draining", DrainDeadline: t0.Add(4500 * time.Millisecond),
			OnInterface: true, Since: t0, FailedPolls: 1, Streak: 2, Transitions: 3,
			Upstreams: []UpstreamStatus{{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 2, Nodes: 3,
				Error: "timeout", MinHealthy: "50%", Needed: 2}},
			Bird: &VIPConfirm{
				Expected: router.Present, Agrees: true, LastResort: true, Stale: true, Problem: "not exported to peer_6",
				InTable: true, Exported: map[string]bool{"peer_4": true, "peer_6": false}, CheckedAt: t0,
				Latency: 40 * time.Millisecond, DisagreeingSince: t0.Add(-time.Second), Renewed: 1,
			},
			Tier: decide.TierLastResort, OnDegraded: true, OnLastResort: true,
			Probe: &ProbeStatus{Target: "GET http://10.0.0.100/health (host api)", Result: "up", Status: 200,
				LatencySeconds: 0.012, Error: "none"},
			FailOpen: &VIPFailOpen{OtherSites: 2, Since: t0, Error: "no answer"},
		}},
	}
}

// sparse is a Status as a daemon just started without BIRD writes it:
// what omitempty and omitzero leave out is left out.
func sparse() Status {
	return Status{
		SchemaVersion: SchemaVersion,
		Interface:     InterfaceStatus{Name: "rhi0"},
		ControlAPI:    APIStatus{URL: "http://127.0.0.1:9090"},
		Drain:         DrainStatus{File: "/etc/rhi/drain"},
		VIPs:          []VIPStatus{{Address: "10.0.0.100/32", Condition: "all", Bird: &VIPConfirm{}}},
	}
}

// TestStatusGolden: the /status JSON, key by key and byte by byte, is the
// one in testdata; -update rewrites it after a deliberate change (which
// SchemaVersion must then say).
func TestStatusGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Status
	}{{"full", full()}, {"sparse", sparse()}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tc.s, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "status-"+tc.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("JSON differs from %s (run with -update if meant):\n%s", path, got)
			}
		})
	}
}

// TestFullSetsEveryField: full leaves no exported field at its zero
// value, so that a field added to the wire without a place in the golden
// file fails here.
func TestFullSetsEveryField(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("%s is nil", path)
				return
			}
			walk(path, v.Elem())
			return
		case reflect.Slice, reflect.Map:
			if v.Len() == 0 {
				t.Errorf("%s is empty", path)
				return
			}
			if v.Kind() == reflect.Slice {
				walk(path+"[0]", v.Index(0))
			}
			return
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				if v.Interface().(time.Time).IsZero() {
					t.Errorf("%s is the zero time", path)
				}
				return
			}
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					walk(path+"."+f.Name, v.Field(i))
				}
			}
			return
		}
		if v.IsZero() {
			t.Errorf("%s is zero", path)
		}
	}
	walk("Status", reflect.ValueOf(full()))
}
