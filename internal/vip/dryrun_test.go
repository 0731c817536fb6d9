package vip

import (
	"context"
	"net/netip"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestDryRunChangesNothing(t *testing.T) {
	f := newFakeKernel()
	f.addLink(iface, "10.0.0.1/32", "192.0.2.9/32")
	log, hook := logtest.NewNullLogger()
	d := NewDryRun(f, iface, log)
	desired := owned("-10.0.0.1/32", "10.0.0.2/32")
	for range 3 {
		st, err := d.Set(context.Background(), DesiredOf(desired))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmpDiff(prefixes("10.0.0.1/32"), st.Present); diff != "" {
			t.Errorf("Present (-want +got):\n%s", diff)
		}
		if diff := cmpDiff(prefixes("192.0.2.9/32"), st.Foreign); diff != "" {
			t.Errorf("Foreign (-want +got):\n%s", diff)
		}
	}
	if f.writes != 0 {
		t.Fatalf("dry run made %d writes", f.writes)
	}
	entries := hook.AllEntries()
	if len(entries) != 1 || entries[0].Level != logrus.WarnLevel ||
		entries[0].Data["would_add"] != "10.0.0.2/32" || entries[0].Data["would_delete"] != "10.0.0.1/32" {
		t.Errorf("log: %v", logged(hook))
	}
	if err := d.Renew(context.Background(), prefixes("10.0.0.1/32")[0], true); err != nil || f.writes != 0 {
		t.Errorf("dry renew: %v, %d writes", err, f.writes)
	}
}

// A dry run deletes no point-to-point entry, and says so once per list.
func TestDryRunDeletesNoPeers(t *testing.T) {
	f := newFakeKernel()
	f.addLink(iface, "10.0.0.1/32")
	log, hook := logtest.NewNullLogger()
	d := NewDryRun(f, iface, log)
	peers := []Peer{{Local: netip.MustParseAddr("10.9.0.1"), Peer: netip.MustParsePrefix("10.9.0.2/32")}}
	for range 3 {
		if err := d.DeletePeers(context.Background(), peers); err != nil {
			t.Fatal(err)
		}
	}
	if f.writes != 0 {
		t.Fatalf("dry run made %d writes", f.writes)
	}
	entries := hook.AllEntries()
	if len(entries) != 1 || entries[0].Data["would_delete_peers"] != "[10.9.0.1 peer 10.9.0.2/32]" {
		t.Errorf("log: %v", logged(hook))
	}
}
