//go:build integration

package inns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/vishvananda/netns"
)

func TestDoSwitchesAndReturns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	name := fmt.Sprintf("rhi-inns-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	target, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	var inside netns.NsHandle
	if err := DoNamed(name, func() error {
		var err error
		inside, err = netns.Get()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(target) {
		t.Error("f did not run in the namespace")
	}
	// Many goroutines later, no thread is left in the namespace.
	for range 50 {
		here, err := netns.Get()
		if err != nil {
			t.Fatal(err)
		}
		if here.Equal(target) {
			t.Fatal("a thread was handed back still in the namespace")
		}
		here.Close()
	}
	want := errors.New("boom")
	if err := DoNamed(name, func() error { return want }); !errors.Is(err, want) {
		t.Errorf("f's error = %v, want %v", err, want)
	}
	if err := DoNamed("rhi-no-such-ns", func() error { return nil }); err == nil {
		t.Error("a missing namespace was entered")
	}
}
