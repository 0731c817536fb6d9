package apisix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// healthBody is the part of a health-checker body the verdict depends on.
// Node lists stay raw because APISIX sends an empty list as {} (a Lua empty
// table encoded by cjson), as [] in the newest code, or leaves it out.
type healthBody struct {
	Name         isString        `json:"name"`
	Nodes        json.RawMessage `json:"nodes"`
	HealthyNodes json.RawMessage `json:"healthy_nodes"` // 2.x–3.2 only
	SrcType      json.RawMessage `json:"src_type"`      // 2.x–3.2 only
}

// isString records whether a field holds a JSON string, without keeping it.
type isString bool

func (s *isString) UnmarshalJSON(b []byte) error {
	*s = len(b) > 0 && b[0] == '"'
	return nil
}

// node is one entry of a 3.3+ node list. Only the status and whether the
// node is being purged matter; ip, port, hostname and counters are skipped.
type node struct {
	Status    string          `json:"status"`
	PurgeTime json.RawMessage `json:"purge_time"`
}

// errorBody is what the control API sends with 400 and 404.
type errorBody struct {
	ErrorMsg *string `json:"error_msg"`
}

// classify turns one HTTP answer into a Result. The error it carries does not
// name the request; the caller adds that.
func classify(status int, contentType string, body []byte) Result {
	switch status {
	case http.StatusOK:
		if isHTML(contentType) {
			// APISIX 3.3+ renders HTML when it thinks a browser asks.
			return failed(fmt.Errorf("HTTP 200 with content type %q", contentType))
		}
		return decodeHealth(body)
	case http.StatusNotFound:
		return classifyNotFound(contentType, body)
	}
	if msg, ok := errorMessage(contentType, body); ok {
		return failed(fmt.Errorf("HTTP %d: %q", status, short(msg)))
	}
	return failed(fmt.Errorf("HTTP %d", status))
}

// classifyNotFound tells APISIX's two meaningful 404s ("no checker for
// upstreams[api]", "upstreams[api] not found") from every other 404: a
// missing src id, nginx's HTML page for an unknown path, a proxy's page.
func classifyNotFound(contentType string, body []byte) Result {
	msg, ok := errorMessage(contentType, body)
	switch {
	case !ok:
		return failed(fmt.Errorf("HTTP 404 without an APISIX error body (content type %q)", contentType))
	case strings.HasPrefix(msg, "no checker for "):
		return Result{Verdict: NoChecker, Err: fmt.Errorf("HTTP 404: %q", short(msg))}
	case strings.HasSuffix(msg, " not found"):
		return Result{Verdict: NotFound, Err: fmt.Errorf("HTTP 404: %q", short(msg))}
	default:
		return failed(fmt.Errorf("HTTP 404: %q", short(msg)))
	}
}

// errorMessage returns error_msg when body is a JSON object carrying one as
// a string, and is not an HTML page.
func errorMessage(contentType string, body []byte) (string, bool) {
	if isHTML(contentType) {
		return "", false
	}
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil || e.ErrorMsg == nil {
		return "", false
	}
	return *e.ErrorMsg, true
}

// short keeps a server's message from flooding the logs.
func short(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}

// decodeHealth reads a 200 body of either format.
func decodeHealth(body []byte) Result {
	b := trimJSONSpace(body)
	var h healthBody
	if err := json.Unmarshal(b, &h); err != nil {
		if len(b) > 0 && b[0] != '{' && json.Valid(b) {
			// A top-level array is what the list endpoint sends.
			return failed(fmt.Errorf("decode: body is %s, not an object", kindOf(b)))
		}
		return failed(fmt.Errorf("decode: %w", err))
	}
	if b[0] != '{' {
		// null decodes into a struct without complaint.
		return failed(fmt.Errorf("decode: body is %s, not an object", kindOf(b)))
	}
	// Both formats always carry a name. Requiring it keeps an empty object
	// ({} is also the empty list endpoint's answer) from reading as "no
	// checker", which counts as healthy by default.
	if !h.Name {
		return failed(errors.New(`decode: "name" missing or not a string`))
	}
	if h.HealthyNodes != nil || h.SrcType != nil {
		return decodeV2(&h)
	}
	return decodeV3(h.Nodes)
}

// decodeV3 applies the 3.3+ rules: purging nodes are ignored, a node is
// healthy when APISIX still sends it traffic, and no node at all means the
// checker has not been created yet.
func decodeV3(raw json.RawMessage) Result {
	var nodes []node
	if err := decodeList(raw, "nodes", &nodes); err != nil {
		return failed(err)
	}
	var r Result
	for i := range nodes {
		if p := nodes[i].PurgeTime; p != nil && string(p) != "null" {
			continue
		}
		r.Total++
		if s := nodes[i].Status; s == "healthy" || s == "mostly_healthy" {
			r.Healthy++
		}
	}
	switch {
	case r.Total == 0:
		r.Verdict, r.Err = NoChecker, errors.New("empty node list")
	case r.Healthy > 0:
		r.Verdict = Up
	default:
		r.Verdict = Down
	}
	return r
}

// decodeV2 applies the 2.x–3.2 rules: healthy_nodes already holds the nodes
// APISIX sends traffic to (healthy and mostly_healthy alike).
func decodeV2(h *healthBody) Result {
	// struct{} elements: only the count matters, but each must be an object.
	var nodes, healthy []struct{}
	if err := decodeList(h.Nodes, "nodes", &nodes); err != nil {
		return failed(err)
	}
	if err := decodeList(h.HealthyNodes, "healthy_nodes", &healthy); err != nil {
		return failed(err)
	}
	r := Result{Healthy: len(healthy), Total: max(len(nodes), len(healthy))}
	switch {
	case len(healthy) > 0:
		r.Verdict = Up
	case len(nodes) == 0:
		r.Verdict, r.Err = NoChecker, errors.New("empty node list")
	default:
		r.Verdict = Down
	}
	return r
}

// decodeList decodes a node list into dst, reading a missing field, null and
// {} as empty. Any other non-array is a shape error.
func decodeList(raw json.RawMessage, field string, dst any) error {
	b := trimJSONSpace(raw)
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '{':
		if len(trimJSONSpace(b[1:len(b)-1])) == 0 {
			return nil
		}
		return fmt.Errorf("decode: %q is a non-empty object, not a list", field)
	case b[0] != '[':
		return fmt.Errorf("decode: %q is %s, not a list", field, kindOf(b))
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("decode: %q: %w", field, err)
	}
	return nil
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

func failed(err error) Result { return Result{Verdict: Failed, Err: err} }

// trimJSONSpace drops the whitespace JSON allows around a value. Not
// bytes.TrimSpace: it also drops \f, \v and Unicode spaces, which would let
// a body that is not JSON through.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }
