package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// clean makes s safe to print on a terminal, on one line: control
// characters (newlines, CR, tabs, ESC, DEL, C1), Unicode format characters
// (bidi overrides, zero-width), line and paragraph separators, and bytes
// that are not UTF-8 are escaped as Go writes them (\n, \x1b, \u202e). A
// multi-line error becomes one line; a terminal sequence does nothing.
func clean(s string) string {
	if !needsClean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

func needsClean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// cleanStrings applies clean to every string reachable from v, which must
// be settable (reflect.ValueOf(&x).Elem()), map keys included: no field of
// the daemon's answer, today's or one added later, reaches a terminal raw.
func cleanStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			cleanStrings(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				cleanStrings(f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			cleanStrings(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			cleanStrings(k)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			cleanStrings(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		if v.CanSet() {
			v.SetString(clean(v.String()))
		}
	}
}

// cleanJSON escapes, in a valid JSON text, what JSON allows raw but clean
// escapes (DEL, C1 controls, format characters, separators), and replaces
// bytes that are not UTF-8 by \ufffd, as a decoder reads them: the text
// means the same and prints safely. Controls JSON forbids raw never get
// here: the caller has decoded raw first.
func cleanJSON(raw []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r == '\n' || r == '\r' || r == '\t' || !unsafeRune(r):
			b.Write(raw[i : i+n])
		default:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
		i += n
	}
	return b.Bytes()
}
