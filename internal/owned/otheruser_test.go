package owned

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRecordOfAnotherUserRefused: the record is an order to delete
// addresses (an address it lists that is on the interface but not in the
// config is withdrawn at start-up). Read refuses links, FIFOs and big
// files, but trusts a regular file whoever owns it: with state_file in a
// directory other users can write to (a /tmp path, a shared /srv), any
// local user can plant a record naming an operator's hand-added address on
// the interface, and the next start deletes it. A record owned by neither
// root nor the reading process is not rhi's and must be refused. (Root
// only: it needs a file of another owner.)
func TestRecordOfAnotherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file of another owner")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "owned")
	if err := os.WriteFile(path, Encode(Record{Iface: "rhi0", VIPs: prefixes("192.0.2.10/32")}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil { // nobody
		t.Fatal(err)
	}
	if r, err := File(path).Read(); err == nil {
		t.Errorf("a record owned by uid 65534 was trusted: %+v", r)
	}
}
