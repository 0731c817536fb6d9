package daemon

// ifaceWrites is what the loop knows of its reads and writes of the VIP
// interface, for the logs, /status and /healthz. The loop alone changes it.
type ifaceWrites struct {
	err    string // the last error, "" once a write succeeds
	failed uint64 // writes (Set) that failed, ever
	run    int    // ticks in a row whose write failed
}

// noteErr records err, from a read or a write, and reports whether it is
// news: another error than the last one, to be logged loudly once.
func (w *ifaceWrites) noteErr(err error) (news bool) {
	msg := err.Error()
	if msg == w.err {
		return false
	}
	w.err = msg
	return true
}

// wrote records a write's outcome (err nil: it succeeded). It reports
// whether err is news, as noteErr does, and whether a success ended an
// error.
func (w *ifaceWrites) wrote(err error) (news, cleared bool) {
	if err != nil {
		w.failed++
		return w.noteErr(err), false
	}
	cleared = w.err != ""
	w.err = ""
	return false, cleared
}

// ticked counts the tick's write, failed (err not nil) or not, in the run
// of failed ones. Repairs between ticks do not count.
func (w *ifaceWrites) ticked(err error) {
	if err != nil {
		w.run++
		return
	}
	w.run = 0
}
