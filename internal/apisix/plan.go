package apisix

import (
	"hash/maphash"
	"math/bits"

	"github.com/rhi-daemon/rhi/internal/health"
)

// Plan is what a poll of a fixed list of upstream keys needs that depends
// on that list alone: the resource each key names, parsed once (keys with
// different etcd prefixes, or repeated, share one), and an index that finds
// a resource by its name, "<type>/<id>". It is the health.Plan the client
// hands the daemon (Client.Plan).
//
// A poll of keys it is handed builds one (Client.Poll); a caller that polls
// the same keys again and again (the daemon, until a reload) builds it once
// and hands it to every poll (Client.PollPlan): made at every poll, its
// tables would be garbage and work in proportion to the keys. A Plan
// holds ~50 bytes a key.
//
// A Plan keeps ups and reads it at every poll: the caller must not change
// ups while it uses the plan (the daemon builds a new slice at a reload).
// It is read-only after NewPlan, so safe for concurrent use.
type Plan struct {
	ups    []health.Upstream
	keyRes []int32 // per key: its resource, or -1 when ParseRef rejects the key
	refs   []Ref   // per resource
	seed   maphash.Seed
	// table finds a resource by the hash of its name, by open addressing:
	// each slot is empty (0) or the hash's high 32 bits and the resource
	// + 1. Its size is a power of two of at least 1.5 slots a resource.
	table []uint64
}

// NewPlan plans polls of ups, which it keeps (see Plan).
func NewPlan(ups []health.Upstream) *Plan {
	p := &Plan{ups: ups, keyRes: make([]int32, len(ups)), seed: maphash.MakeSeed()}
	p.table = make([]uint64, tableSize(len(ups)))
	for i := range ups {
		ref, err := ParseRef(ups[i].Key)
		if err != nil {
			p.keyRes[i] = -1
			continue
		}
		h := p.refHash(&ref)
		j, ok := p.find(h, func(r *Ref) bool { return *r == ref })
		if !ok {
			j = len(p.refs)
			p.refs = append(p.refs, ref)
			p.insert(h, j)
		}
		p.keyRes[i] = int32(j)
	}
	return p
}

// tableSize is the power of two of at least 1.5 slots for each of n
// resources (at least 8).
func tableSize(n int) int {
	return 1 << max(3, bits.Len(uint(n+n/2)))
}

// refHash is the hash of ref's name, "<type>/<id>", as Lookup hashes it.
func (p *Plan) refHash(ref *Ref) uint64 {
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.WriteString(ref.Type)
	h.WriteByte('/')
	h.WriteString(ref.ID)
	return h.Sum64()
}

// find returns the resource whose hash is h and whose Ref is matched.
func (p *Plan) find(h uint64, match func(*Ref) bool) (int, bool) {
	mask := uint64(len(p.table) - 1)
	tag := h >> 32
	for s := h & mask; ; s = (s + 1) & mask {
		e := p.table[s]
		if e == 0 {
			return 0, false
		}
		if e>>32 == tag {
			if j := int(uint32(e)) - 1; match(&p.refs[j]) {
				return j, true
			}
		}
	}
}

func (p *Plan) insert(h uint64, j int) {
	mask := uint64(len(p.table) - 1)
	s := h & mask
	for p.table[s] != 0 {
		s = (s + 1) & mask
	}
	p.table[s] = h>>32<<32 | uint64(j+1)
}

// Upstreams returns the keys the plan was made for.
func (p *Plan) Upstreams() []health.Upstream { return p.ups }

// Resources is the number of distinct valid resources the keys name.
func (p *Plan) Resources() int { return len(p.refs) }

// Resource returns resource j's Ref, 0 ≤ j < Resources().
func (p *Plan) Resource(j int) Ref { return p.refs[j] }

// KeyResource returns the resource key i reads, 0 ≤ i < len(Upstreams()),
// or false when ParseRef rejects the key.
func (p *Plan) KeyResource(i int) (int, bool) {
	j := p.keyRes[i]
	return int(j), j >= 0
}

// Lookup returns the resource whose name, "<type>/<id>", is name, if the
// keys name it. It allocates nothing.
func (p *Plan) Lookup(name []byte) (int, bool) {
	return p.find(maphash.Bytes(p.seed, name), func(r *Ref) bool {
		t := len(r.Type)
		return len(name) == t+1+len(r.ID) && string(name[:t]) == r.Type && name[t] == '/' && string(name[t+1:]) == r.ID
	})
}
