package daemon

import (
	"reflect"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/confirm"
	"github.com/rhi-daemon/rhi/internal/status"
)

// TestWireConfirmCopiesEveryField: each field of the /status wire's
// VIPConfirm is filled from the field of the same name in confirm.VIP, so
// a field added to both without a line in wireConfirm fails here.
func TestWireConfirmCopiesEveryField(t *testing.T) {
	var in confirm.VIP
	src := reflect.ValueOf(&in).Elem()
	wire := reflect.TypeFor[status.VIPConfirm]()
	for i := range wire.NumField() {
		f := wire.Field(i)
		sf := src.FieldByName(f.Name)
		if !sf.IsValid() || sf.Type() != f.Type {
			t.Fatalf("confirm.VIP has no field %s of type %s to fill it from", f.Name, f.Type)
		}
		setNonZero(t, f.Name, sf)
	}
	out := reflect.ValueOf(wireConfirm(in)).Elem()
	for i := range wire.NumField() {
		name := wire.Field(i).Name
		if got, want := out.Field(i).Interface(), src.FieldByName(name).Interface(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: wire has %v, confirm.VIP %v", name, got, want)
		}
	}
}

// setNonZero sets v to a value other than its type's zero.
func setNonZero(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)))
	case v.Kind() == reflect.String:
		v.SetString("x")
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.CanInt():
		v.SetInt(7)
	case v.Kind() == reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	default:
		t.Fatalf("%s: no non-zero value for %s: teach setNonZero", name, v.Type())
	}
}
