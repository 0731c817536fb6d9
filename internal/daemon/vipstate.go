package daemon

import (
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/place"
)

// vipStates is the loop's state of each configured VIP, in config order:
// entry i is cfg.VIPs[i]'s. Slices, rebuilt on reload, rather than maps
// keyed by prefix: at 10,000 VIPs three such maps held 3.2 MiB, the slices
// and their index hold 0.8 MiB. Lookups by prefix go through
// order, the positions sorted by address. The state is empty until seed
// (the daemon's start): until then no VIP is known, as with the maps.
type vipStates struct {
	vips  []config.VIP   // cfg.VIPs, for the addresses
	order []int32        // positions in vips, sorted by address
	state []decide.State // per position; empty before seed
	// placed is each VIP's placement (place.Place), computed after every
	// change of its inputs (placeAll), as its index in kinds; 0, the zero
	// Placement, before the first. A byte a VIP where a Placement is 32.
	placed []uint8
	kinds  placeKinds
	// cur is where each VIP is now (currentAll), as of the interfaces'
	// lists and the VIPs curOf names: a State's Present is never changed
	// in place, nor a config's VIPs, so while the same lists and VIPs are
	// in use, cur holds, and placeAll need not walk them again.
	cur   []uint8
	curOf curKey
	since []time.Time // last change of Announced or presence
	// flips counts the changes of Announced, up to 2^32-1 (a change every
	// 100 ms, the fastest polls, reaches it in 13 years): half the bytes
	// of a uint64 per VIP.
	flips []uint32
	ready bool // seeded: the state is known
	// shared says that a status view holds since and flips (vipRecs.fill):
	// they change seldom, so views share them instead of copying 320 KB
	// a tick at 10,000 VIPs, and touch copies them before the
	// first change after a publish.
	shared bool
}

// touch notes a change of the i-th VIP at now: of its presence, and of
// Announced too if flip. Every change of since and flips after seed goes
// through it, since a view may share them.
func (s *vipStates) touch(i int, now time.Time, flip bool) {
	if s.shared {
		s.since, s.flips = slices.Clone(s.since), slices.Clone(s.flips)
		s.shared = false
	}
	s.since[i] = now
	if flip {
		if s.flips[i] < math.MaxUint32 { // stays there rather than wrap to 0
			s.flips[i]++
		}
	}
}

// index sets the configuration's VIPs and rebuilds the lookup order. It
// leaves the state alone: setConfig calls it, and reload rebuilds the
// state for the new order first.
func (s *vipStates) index(vips []config.VIP) {
	s.vips = vips
	s.order = s.order[:0]
	for i := range vips {
		s.order = append(s.order, int32(i))
	}
	slices.SortFunc(s.order, func(a, b int32) int { return vips[a].Address.Compare(vips[b].Address) })
}

// at returns p's position, if p is a configured VIP and the state has
// been seeded.
func (s *vipStates) at(p netip.Prefix) (int, bool) {
	k, ok := slices.BinarySearchFunc(s.order, p, func(i int32, p netip.Prefix) int { return s.vips[i].Address.Compare(p) })
	if !ok || !s.ready {
		return 0, false
	}
	return int(s.order[k]), true
}

// get returns p's state; the zero State (withdrawn) if p is not a VIP.
func (s *vipStates) get(p netip.Prefix) decide.State {
	if i, ok := s.at(p); ok {
		return s.state[i]
	}
	return decide.State{}
}

// seed gives every VIP its initial state, present or not as present says.
func (s *vipStates) seed(present func(netip.Prefix) bool, now time.Time) {
	n := len(s.vips)
	s.state, s.since, s.flips = make([]decide.State, n), make([]time.Time, n), make([]uint32, n)
	s.placed = make([]uint8, n)
	s.shared = false
	for i := range s.vips {
		s.state[i] = decide.Initial(present(s.vips[i].Address))
		s.since[i] = now
	}
	s.ready = true
}

// reload moves the state to vips, the new configuration's VIPs: a VIP
// that stays keeps its state, a new one starts from initial(p) at now.
// It returns the VIPs dropped, in the old config order, and how many were
// added. Before seed there is no state to move: it only re-indexes.
func (s *vipStates) reload(vips []config.VIP, initial func(netip.Prefix) decide.State, now time.Time) (dropped []netip.Prefix, added int) {
	if !s.ready {
		s.index(vips)
		return nil, 0
	}
	old := *s
	n := len(vips)
	s.state, s.since, s.flips = make([]decide.State, n), make([]time.Time, n), make([]uint32, n)
	s.placed = make([]uint8, n)
	s.shared = false
	s.order = nil // old still uses its order
	s.index(vips)
	kept := make([]bool, len(old.vips))
	for i := range vips {
		p := vips[i].Address
		if j, ok := old.at(p); ok {
			s.state[i], s.since[i], s.flips[i], s.placed[i] = old.state[j], old.since[j], old.flips[j], old.placed[j]
			kept[j] = true
			continue
		}
		s.state[i], s.since[i] = initial(p), now
		added++
	}
	for j := range old.vips {
		if !kept[j] {
			dropped = append(dropped, old.vips[j].Address)
		}
	}
	return dropped, added
}

// placement is the i-th VIP's placement.
func (s *vipStates) placement(i int) place.Placement { return s.kinds.of(s.placed[i]) }

// present reports whether the i-th VIP's placement has it on an
// interface (its tier is Present), without comparing strings.
func (s *vipStates) present(i int) bool {
	c := int(s.placed[i])
	return c < len(s.kinds.present) && s.kinds.present[c]
}

// place sets the i-th VIP's placement, and reports whether it changed.
func (s *vipStates) place(i int, pl place.Placement) bool {
	if s.kinds.of(s.placed[i]) == pl {
		return false
	}
	s.placed[i] = s.kinds.code(pl)
	return true
}

// placeKinds are the placements seen, each named by its index: a VIP's
// placement is kept as a byte. The list only grows (views share it), and
// stays short: a placement is one of decide's four tiers with one of
// decide's or place's reasons, fewer than a hundred pairs, so that its
// indexes fit a byte. The zero Placement is index 0.
type placeKinds struct {
	list    []place.Placement
	present []bool // list[c].Tier.Present()
}

// of is the placement of index c.
func (k *placeKinds) of(c uint8) place.Placement {
	if int(c) < len(k.list) {
		return k.list[c]
	}
	return place.Placement{}
}

// code is pl's index, pl added to the list if new.
func (k *placeKinds) code(pl place.Placement) uint8 {
	if len(k.list) == 0 {
		k.list, k.present = append(k.list, place.Placement{}), append(k.present, false)
	}
	for i := range k.list {
		if k.list[i] == pl {
			return uint8(i)
		}
	}
	k.list, k.present = append(k.list, pl), append(k.present, pl.Tier.Present())
	return uint8(len(k.list) - 1)
}

// curKey names what vipStates.cur was computed from: the interfaces'
// Present lists and the configuration's VIPs, each by its first element
// and length (holding the first keeps the array from being reused).
type curKey struct {
	lists [3]struct {
		first *netip.Prefix
		n     int
	}
	vips *config.VIP
	n    int
}

// keyOf is the curKey of lists and vips.
func keyOf(lists [3][]netip.Prefix, vips []config.VIP) curKey {
	var k curKey
	for i, l := range lists {
		if len(l) > 0 {
			k.lists[i].first, k.lists[i].n = &l[0], len(l)
		}
	}
	if len(vips) > 0 {
		k.vips, k.n = &vips[0], len(vips)
	}
	return k
}
