package apisix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/rhi-daemon/rhi/internal/health"
)

// healthBody is the part of a health-checker body the verdict depends on.
// Node lists stay raw until the format is known, because keys arrive in any
// order; APISIX sends an empty list as {} (a Lua empty table encoded by
// cjson), as [] in the newest code, or leaves it out.
type healthBody struct {
	name         []byte // "name" as quoted in the body, when a string
	nameEsc      bool   // it holds an escape
	nodes        []byte
	healthyNodes []byte // 2.x–3.2 only
	v2           bool   // src_type, src_id or healthy_nodes: keys only 2.x–3.2 sends
	v3           bool   // type: the key only 3.3+ sends
}

// bodyKeys are the keys of a health-checker body (and of a list entry)
// that matter, in both formats; the constants index it.
var bodyKeys = []string{"name", "nodes", "healthy_nodes", "src_type", "src_id", "type"}

const (
	keyName = iota
	keyNodes
	keyHealthyNodes
	keySrcType
	keySrcID
	keyType
)

// nodeKeys are the keys of a 3.3+ node that matter. 2.x–3.2 nodes are the
// upstream's own {host, port, weight, priority}: either key in one makes
// the body mixed.
var nodeKeys = []string{"status", "purge_time"}

const (
	keyStatus = iota
	keyPurgeTime
)

// readHealthBody reads a body's object at w.
func readHealthBody(w *walker) (healthBody, error) {
	var h healthBody
	err := w.object(bodyKeys, func(k int) error {
		var err error
		switch k {
		case keyName:
			// Kept as quoted, no copy: whether it is a string decides
			// the body, the text is read only to check it names the
			// resource asked for. The body is valid JSON, so its escapes
			// are.
			if w.peek() != '"' {
				return w.skip()
			}
			h.name, h.nameEsc, err = w.str()
		case keyNodes:
			h.nodes, err = w.raw()
		case keyHealthyNodes:
			h.v2 = true
			h.healthyNodes, err = w.raw()
		case keyType:
			h.v3 = true
			err = w.skip()
		default:
			h.v2 = true
			err = w.skip()
		}
		return err
	})
	return h, err
}

// classify turns one HTTP answer into a Result, and returns what the answer
// says it is about (answersFor checks it): a 200 body's name, a 404's
// error_msg, "" for any other. The error it carries does not name the
// request; the caller adds that.
func classify(status int, contentType string, body []byte) (r health.Result, about string) {
	switch status {
	case http.StatusOK:
		if isHTML(contentType) {
			// APISIX 3.3+ renders HTML when it thinks a browser asks.
			return failed(fmt.Errorf("HTTP 200 with content type %q", contentType)), ""
		}
		return decodeHealthNamed(body)
	case http.StatusNotFound:
		return classifyNotFound(contentType, body)
	}
	if msg, ok := errorMessage(contentType, body); ok {
		return failed(fmt.Errorf("HTTP %d: %q", status, short(msg))), ""
	}
	return failed(fmt.Errorf("HTTP %d", status)), ""
}

// classifyNotFound tells APISIX's two meaningful 404s ("no checker for
// upstreams[api]", "upstreams[api] not found") from every other 404: a
// missing src id, nginx's HTML page for an unknown path, a proxy's page.
func classifyNotFound(contentType string, body []byte) (health.Result, string) {
	msg, ok := errorMessage(contentType, body)
	switch {
	case !ok:
		return failed(fmt.Errorf("HTTP 404 without an APISIX error body (content type %q)", contentType)), ""
	case strings.HasPrefix(msg, "no checker for "):
		return health.Result{Verdict: health.NoChecker, Err: fmt.Errorf("HTTP 404: %q", short(msg))}, msg
	case strings.HasSuffix(msg, " not found"):
		return health.Result{Verdict: health.NotFound, Err: fmt.Errorf("HTTP 404: %q", short(msg))}, msg
	default:
		return failed(fmt.Errorf("HTTP 404: %q", short(msg))), msg
	}
}

// errorMessage returns error_msg when body is a JSON object carrying one as
// a string, and is not an HTML page.
func errorMessage(contentType string, body []byte) (string, bool) {
	if isHTML(contentType) {
		return "", false
	}
	if !validJSON(body) {
		return "", false
	}
	w := &walker{b: body}
	var msg string
	var ok bool
	err := w.object([]string{"error_msg"}, func(int) error {
		var err error
		msg, ok, err = w.stringValue()
		return err
	})
	return msg, err == nil && ok
}

// short keeps a server's message from flooding the logs.
func short(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}

// decodeHealth reads a 200 body of either format. A body is read in one
// format only: one that carries keys of both is Failed, since which rules
// apply is then a guess.
func decodeHealth(body []byte) health.Result {
	r, _ := decodeHealthNamed(body)
	return r
}

// decodeHealthNamed is decodeHealth that also returns the body's name
// ("" when it has none).
func decodeHealthNamed(body []byte) (health.Result, string) {
	b := trimJSONSpace(body)
	if !validJSON(b) {
		var v any
		return failed(fmt.Errorf("decode: %w", json.Unmarshal(b, &v))), ""
	}
	if b[0] != '{' {
		// A top-level array is what the list endpoint sends.
		return failed(fmt.Errorf("decode: body is %s, not an object", kindOf(b))), ""
	}
	h, err := readHealthBody(&walker{b: b})
	if err != nil {
		return failed(fmt.Errorf("decode: %w", err)), ""
	}
	// Both formats always carry a name. Requiring it keeps an empty object
	// ({} is also the empty list endpoint's answer) from reading as "no
	// checker", which counts as healthy by default.
	if h.name == nil {
		return failed(errors.New(`decode: "name" missing or not a string`)), ""
	}
	name, err := unquote(h.name, h.nameEsc)
	if err != nil {
		return failed(fmt.Errorf("decode: name: %w", err)), ""
	}
	switch {
	case h.v2 && h.v3:
		return failed(errors.New(`decode: body mixes the 2.x-3.2 format (src_type, src_id, healthy_nodes) with the 3.3+ one (type)`)), name
	case h.v2:
		return decodeV2(&h), name
	}
	return decodeV3(h.nodes), name
}

// node is what matters of one 3.3+ node: whether its status is one APISIX
// sends traffic to, and whether it is being purged. ip, port, hostname and
// counters are skipped.
type node struct {
	healthy bool // status is "healthy" or "mostly_healthy"
	moving  bool // status is "mostly_healthy" or "mostly_unhealthy"
	purging bool // purge_time holds anything but null
}

// readNode reads one node list element at w; obj is false for null, which
// reads as a node without a status.
func readNode(w *walker, obj bool) (node, error) {
	var n node
	if !obj {
		return n, nil
	}
	err := w.object(nodeKeys, func(k int) error {
		if k == keyPurgeTime {
			n.purging = w.peek() != 'n'
			return w.skip()
		}
		switch w.peek() {
		case '"':
			// Compared in place: a string per node was half of a
			// 10,000-upstream list's allocations.
			q, esc, err := w.str()
			if err != nil {
				return err
			}
			status := q[1 : len(q)-1]
			if esc {
				s, err := unquote(q, esc)
				if err != nil {
					return err
				}
				status = []byte(s)
			}
			n.healthy = string(status) == "healthy" || string(status) == "mostly_healthy"
			n.moving = string(status) == "mostly_healthy" || string(status) == "mostly_unhealthy"
			return nil
		case 'n': // null: no status, as Unmarshal read it
			return w.skip()
		}
		return fmt.Errorf(`"status" is %s, not a string`, kindOf(w.b[w.i:]))
	})
	return n, err
}

// decodeV3 applies the 3.3+ rules: purging nodes are ignored, a node is
// healthy when APISIX still sends it traffic, and no node at all means the
// checker has not been created yet.
func decodeV3(raw []byte) health.Result { return decodeV3At(&walker{b: raw}) }

// decodeV3At is decodeV3 on the node list at w. Unless the Result is
// Failed, w is just past the list.
func decodeV3At(w *walker) health.Result {
	var r health.Result
	err := nodeListAt(w, "nodes", func(w *walker, obj bool) error {
		n, err := readNode(w, obj)
		if err != nil || n.purging {
			return err
		}
		r.Total++
		if n.healthy {
			r.Healthy++
		}
		if n.moving {
			r.Moving++
		}
		return nil
	})
	if err != nil {
		return failed(err)
	}
	switch {
	case r.Total == 0:
		r.Verdict, r.Err = health.NoChecker, errors.New("empty node list")
	case r.Healthy > 0:
		r.Verdict = health.Up
	default:
		r.Verdict = health.Down
	}
	return r
}

// decodeV2 applies the 2.x–3.2 rules: healthy_nodes already holds the nodes
// APISIX sends traffic to (healthy and mostly_healthy alike).
func decodeV2(h *healthBody) health.Result {
	// Only the count matters, but each node must be an object (or null,
	// as Unmarshal into a slice always allowed) without 3.3+ keys.
	count := func(raw []byte, field string) (int, error) {
		n := 0
		err := nodeList(raw, field, func(w *walker, obj bool) error {
			n++
			if !obj {
				return nil
			}
			return w.object(nodeKeys, func(k int) error {
				return fmt.Errorf("node key %q of the 3.3+ format in a 2.x-3.2 body", nodeKeys[k])
			})
		})
		return n, err
	}
	nodes, err := count(h.nodes, "nodes")
	if err != nil {
		return failed(err)
	}
	healthy, err := count(h.healthyNodes, "healthy_nodes")
	if err != nil {
		return failed(err)
	}
	// A node takes at least 2 bytes of a body bounded far below 4 GiB:
	// the counts fit.
	r := health.Result{Healthy: int32(healthy), Total: int32(max(nodes, healthy))}
	switch {
	case healthy > 0:
		r.Verdict = health.Up
	case nodes == 0:
		r.Verdict, r.Err = health.NoChecker, errors.New("empty node list")
	default:
		r.Verdict = health.Down
	}
	return r
}

// kindOf names the JSON type a value starts with, for error messages.
func kindOf(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	switch c := b[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "not JSON"
}

// isHTML reports a text/html media type, parameters aside. A lenient match
// on purpose: a malformed header that still says HTML is HTML.
func isHTML(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/html")
}

func failed(err error) health.Result { return health.Result{Verdict: health.Failed, Err: err} }

// trimJSONSpace drops the whitespace JSON allows around a value. Not
// bytes.TrimSpace: it also drops \f, \v and Unicode spaces, which would let
// a body that is not JSON through.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// refPath is the control-API path of r's health checker, with type and id
// path-escaped. ParseRef only admits ids that need no escaping; the
// escaping keeps a Ref built by hand from changing the path's shape.
func refPath(r Ref) string {
	return "/v1/healthcheck/" + url.PathEscape(r.Type) + "/" + url.PathEscape(r.ID)
}

// answersFor checks that an answer read for ref is about ref: a 200 body's
// name ends with "/<type>/<id>" in every format APISIX has sent
// ("/apisix/upstreams/1", "/upstreams/1", "upstream#/apisix/routes/1"), a
// 404 that says "no checker for <type>[<id>]" or "<type>[<id>] not found"
// names it (any other 404 is Failed already). An HTTP/1.1 answer is matched to
// its request by order on the connection alone: a server (or proxy) that
// sends one answer too many shifts every later answer onto the wrong
// request. Checking the name turns that into an unreadable upstream
// instead of another upstream's health.
//
// about is what classify read of the answer; "" (an answer classify has
// failed, or one that names nothing) passes.
func answersFor(status int, about string, ref Ref) error {
	if about == "" {
		return nil
	}
	switch status {
	case http.StatusOK:
		if !strings.HasSuffix(about, "/"+ref.Type+"/"+ref.ID) {
			return fmt.Errorf("answer names %q, not %s/%s", short(about), ref.Type, ref.ID)
		}
	case http.StatusNotFound:
		msg := about
		res := ref.Type + "[" + ref.ID + "]"
		if msg != "no checker for "+res && msg != res+" not found" && (strings.HasPrefix(msg, "no checker for ") || strings.HasSuffix(msg, " not found")) {
			return fmt.Errorf("HTTP 404 %q is not about %s[%s]", short(msg), ref.Type, ref.ID)
		}
	}
	return nil
}
