package health

// A Plan is what a health source prepares to poll a fixed list of upstream
// keys again and again: which keys read one resource (two spellings of one
// checker are one upstream: read once, logged once, counted once) and
// whatever else the source needs to poll them cheaply. The daemon asks its
// source for one at each configuration and hands it to every poll. A Plan
// is read-only once made, and comparable: the daemon tells a new one from
// the one it has by ==.
type Plan interface {
	// Upstreams returns the keys the plan was made for, which the caller
	// must not change.
	Upstreams() []Upstream
	// Resources is the number of distinct resources the keys read.
	Resources() int
	// KeyResource returns the resource key i reads, 0 ≤ i <
	// len(Upstreams()), numbered from 0 in the order of their first key;
	// false when the key names nothing the source can read (a poll
	// reports it Failed).
	KeyResource(i int) (int, bool)
}

// KeyPlan is the Plan of a source for which each key is its own resource:
// ups must not repeat a key. Plans are compared as the same or another
// (a pointer): a new one is a new configuration's.
func KeyPlan(ups []Upstream) Plan { return &keyPlan{ups} }

type keyPlan struct{ ups []Upstream }

func (p *keyPlan) Upstreams() []Upstream         { return p.ups }
func (p *keyPlan) Resources() int                { return len(p.ups) }
func (p *keyPlan) KeyResource(i int) (int, bool) { return i, true }
