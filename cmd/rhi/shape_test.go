package main

// The dependency rules of the module's shape, held here where cmd/rhi wires
// the adapters together: shared words and the pure core build without the
// HTTP client; status, confirm and the router's words do no I/O; what
// `rhi verify` expects is learnt without BIRD; the daemon reaches BIRD and
// APISIX only through interfaces it owns; only the APISIX client knows
// APISIX's control-API paths and resource types.
//
// A rule that does not hold yet is listed in knownExceptions with what
// remains to be moved. The test fails on any new violation and on an
// exception that no longer happens, so the list only shrinks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const module = "github.com/rhi-daemon/rhi"

// forbidden says, for a package of the module, which packages it must not
// reach, even transitively.
var forbidden = []struct {
	pkg  string
	deny []string
}{
	// health is the words every package shares: not even YAML.
	{"internal/health", []string{"net/http", "crypto/tls", "gopkg.in/yaml.v3", module + "/internal/apisix"}},
	// probespec is what a probe is, without the prober.
	{"internal/probespec", []string{"net/http", "crypto/tls", module + "/internal/probe"}},
	// config checks upstream keys by the rule it is handed (KeyRule):
	// what a key names is the APISIX client's to say, and neither config
	// nor what decides by it may ask the client directly.
	{"internal/config", []string{module + "/internal/apisix"}},
	{"internal/decide", []string{"net/http", "crypto/tls", module + "/internal/apisix"}},
	{"internal/router", []string{"net/http", module + "/bird", module + "/internal/guardbird"}},
	{"internal/expect", []string{module + "/bird", module + "/internal/guardbird", module + "/internal/apisix"}},
	// status is the wire: it owns its structs, so it reaches none of the
	// parts that fill them, nor those that talk to BIRD, APISIX, a probe's
	// target or the interface. The daemon converts confirm's results to it.
	{"internal/status", []string{"net/http", module + "/bird", module + "/internal/guardbird",
		module + "/internal/confirm", module + "/internal/verify", module + "/internal/probe",
		module + "/internal/apisix", module + "/internal/vip", module + "/internal/daemon"}},
	{"internal/confirm", []string{"net/http", module + "/bird", module + "/internal/guardbird",
		module + "/internal/verify", module + "/internal/status"}},
	{"internal/daemon", []string{module + "/bird", module + "/internal/guardbird", module + "/internal/apisix"}},
}

// knownExceptions are violations that still exist, as "package -> dependency"
// or "file: knows APISIX's "word"". Each names what remains to be done.
var knownExceptions = map[string]string{}

// apisixWords are strings only the APISIX client may write: its control
// API's path, a resource type found in no other word, and an answer's text.
var apisixWords = []string{"/v1/healthcheck", "stream_routes", "no checker for"}

func TestDependencyRules(t *testing.T) {
	root := moduleRoot(t)
	pkgs := make([]string, len(forbidden))
	for i, f := range forbidden {
		pkgs[i] = f.pkg
	}
	deps := listDeps(t, root, pkgs)
	var found []string
	for _, f := range forbidden {
		for _, d := range f.deny {
			if deps[module+"/"+f.pkg][d] {
				found = append(found, f.pkg+" -> "+d)
			}
		}
	}
	found = append(found, apisixPathUsers(t, root)...)
	sort.Strings(found)

	for _, v := range found {
		if _, ok := knownExceptions[v]; !ok {
			t.Errorf("new dependency violation: %s", v)
		}
	}
	for v := range knownExceptions {
		if !slices.Contains(found, v) {
			t.Errorf("known exception %q no longer happens: remove it from knownExceptions", v)
		}
	}
}

// listDeps returns, for each of the module's packages pkgs, the import
// paths it reaches, without test files (a test may use what the package
// must not). One go list answers for all of them.
func listDeps(t *testing.T, root string, pkgs []string) map[string]map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"list", "-json=ImportPath,Deps"}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(pkgs, " "), err, stderr.Bytes())
	}
	all := map[string]map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: decoding: %v", err)
		}
		deps := map[string]bool{}
		for _, d := range p.Deps {
			deps[d] = true
		}
		all[p.ImportPath] = deps
	}
	for _, p := range pkgs {
		if len(all[module+"/"+p]) == 0 {
			t.Fatalf("go list listed no dependencies of %s", p)
		}
	}
	return all
}

// apisixPathUsers lists the non-test Go files outside internal/apisix (and
// outside the integration lab, which plays APISIX) that contain one of
// apisixWords.
func apisixPathUsers(t *testing.T, root string) []string {
	t.Helper()
	var users []string
	for _, dir := range []string{"internal", "cmd", "bird", "deploy"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "internal/apisix" || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, p := range apisixWords {
				if bytes.Contains(b, []byte(p)) {
					users = append(users, rel+": knows APISIX's "+strconv.Quote(p))
					break
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return users
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(dir)) // this file lives in <root>/cmd/rhi
}
