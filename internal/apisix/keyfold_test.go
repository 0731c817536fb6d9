package apisix

import (
	"bytes"
	"encoding/json"
	"testing"
)

// refKey is walker.key as it was before the length test: every known name
// is compared with bytes.EqualFold.
func refKey(k []byte, known []string) (int, bool) {
	for i, name := range known {
		if string(k) == name {
			return i, false
		}
	}
	for _, name := range known {
		if bytes.EqualFold(k, []byte(name)) {
			return -1, true
		}
	}
	return -1, false
}

func checkKey(t *testing.T, k string) {
	t.Helper()
	q, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, known := range [][]string{bodyKeys, nodeKeys} {
		w := &walker{b: q}
		got, err := w.key(known)
		want, fold := refKey([]byte(k), known)
		if got != want || (err != nil) != fold {
			t.Fatalf("key(%q) = %d, %v; want %d, case error %v", q, got, err, want, fold)
		}
	}
}

// TestKeyFold: keys that fold to a known one through a longer rune
// (ſ U+017F to s, K U+212A to k), keys of the same length in another case,
// and keys that are near misses, read as before the length test.
func TestKeyFold(t *testing.T) {
	for _, k := range []string{
		"status", "STATUS", "ſtatus", "ſtatuſ", "Status", "statu", "statuss", "sta\u212atus",
		"purge_time", "PURGE_TIME", "purge_time\u00e9", "nodes", "NODES", "nodeſ", "na\u212ame",
		"name", "NAME", "type", "TYPE", "\u212a", "k", "healthy_nodes", "HEALTHY_NODEſ",
		"src_id", "SRC_ıD", "src_\u0130d", "", "\xff", "stat\xffs", "counter", "hostname", "ip", "port",
	} {
		checkKey(t, k)
	}
}

func FuzzKeyFold(f *testing.F) {
	for _, k := range []string{"status", "ſtatus", "NODES", "na\u212ame", "hostname", "\xff\xfe"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) { checkKey(t, k) })
}
