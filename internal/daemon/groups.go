package daemon

import (
	"cmp"
	"slices"
)

// groups is, for each of n groups, a list of ints (positions): one slice
// for them all and an offset per group, where a slice per group would
// cost a header of 24 bytes and an allocation each.
type groups struct {
	start []int32 // group j is item[start[j]:start[j+1]]
	item  []int32
}

// groupPairs builds n groups from pairs {group, item}, each group's items
// ascending without repeats. It sorts pairs.
func groupPairs(n int, pairs [][2]int32) groups {
	slices.SortFunc(pairs, func(a, b [2]int32) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	pairs = slices.Compact(pairs)
	g := groups{start: make([]int32, n+1), item: make([]int32, len(pairs))}
	for k, p := range pairs {
		g.start[p[0]+1]++
		g.item[k] = p[1]
	}
	for j := range n {
		g.start[j+1] += g.start[j]
	}
	return g
}

// len is the number of groups.
func (g groups) len() int { return max(len(g.start)-1, 0) }

// of is group j's items; the caller must not change them.
func (g groups) of(j int) []int32 { return g.item[g.start[j]:g.start[j+1]] }
