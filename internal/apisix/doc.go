// Package apisix reads upstream health from the APISIX control API
// (GET /v1/healthcheck/<type>/<id>) and turns each answer into a
// health.Verdict. What it reports (Result, Snapshot) is in the daemon's
// words, internal/health, so that the packages deciding on them need no
// HTTP; what only APISIX knows (an upstream key's resource, Ref, ParseRef,
// the control-API paths) stays here.
//
// One Poll fetches every distinct resource once, concurrently, over
// kept-alive connections and under one deadline, and returns a
// health.Snapshot keyed by the upstream keys of the config; a Plan parses
// each key into a Ref once, so a poll of a plan parses nothing. In
// ModeList, and in ModeAuto for many
// upstreams on APISIX 3.3+, a poll first reads the list of every checker
// (GET /v1/healthcheck) and fetches one by one only the keys the list
// lacks; see Mode. Both response formats are understood:
// APISIX 3.3+ ({"name","type","nodes":[{…,"status"}]}) and 2.x–3.2
// ({"name","src_type","src_id","nodes","healthy_nodes"}); see docs/semantics.md for
// the rules and testdata/README.md for where each captured body comes from.
// Decoding is strict where APISIX is (jsonwalk.go): keys match in their
// exact case, a known key repeated or spelled in another case makes the
// body unreadable, and a body carrying keys of both formats is Failed.
//
// The client never returns an error for a poll as a whole: every key gets a
// health.Result, and a key that could not be read is health.Failed with the
// reason in Result.Err. Deciding what a Failed upstream means is the caller's job.
package apisix
