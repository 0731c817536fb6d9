package apisix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A list decoder on encoding/json, kept as the oracle of listReader: a
// json.Decoder reads the list token by token and each entry with Decode
// into listEntry (its UnmarshalJSON), so encoding/json's scanner decides
// what is JSON. FuzzListReaderAgainstDecoder holds the two to the same
// answers.

// decodeHealthListStd is decodeHealthList as it was, on a json.Decoder.
func decodeHealthListStd(ctx context.Context, r io.Reader, want map[string]Ref, lim listLimits) (map[Ref]listed, error) {
	m := &meter{r: r, limit: lim.bytes, entryLimit: lim.entryBytes}
	dec := json.NewDecoder(m)
	t, err := next(dec)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if t != json.Delim('[') {
		if err := emptyListStd(dec, t); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		return nil, nil
	}
	e := listEntry{want: want, out: make(map[Ref]listed, len(want))}
	for n := 0; dec.More(); n++ {
		if n == lim.entries {
			return nil, fmt.Errorf("%w: more than %d entries", errListTooLarge, lim.entries)
		}
		if n%256 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("decode: stopped after %d entries: %w", n, context.Cause(ctx))
		}
		m.mark = dec.InputOffset()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("decode: entry %d: %w", n, err)
		}
		if e.v2 {
			return nil, errV2List
		}
	}
	if _, err := next(dec); err != nil { // ']'
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := atEOF(dec); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return e.out, nil
}

// emptyListStd accepts the rest of a body that starts with t and is not an
// array only if it is an empty list: {} or null.
func emptyListStd(dec *json.Decoder, t json.Token) error {
	switch t {
	case json.Delim('{'):
		t, err := next(dec)
		if err != nil {
			return err
		}
		if t != json.Delim('}') {
			return errors.New("body is a non-empty object, not a list")
		}
	case nil:
	default:
		return fmt.Errorf("body is %s, not a list", tokenKind(t))
	}
	return atEOF(dec)
}

// next reads a token inside a value, where the end of the input is an
// error: the decoder reports it as a bare io.EOF.
func next(dec *json.Decoder) (json.Token, error) {
	t, err := dec.Token()
	return t, noEOF(err)
}

// atEOF checks that nothing but JSON whitespace follows the value read.
func atEOF(dec *json.Decoder) error {
	t, err := dec.Token()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("data after the top-level value (%v)", t)
}

// tokenKind names the JSON type of a token, for error messages.
func tokenKind(t json.Token) string {
	switch t.(type) {
	case json.Delim:
		if t == json.Delim('{') {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
