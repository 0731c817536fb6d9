// Package tiers holds the netns lab tests of the tiers' BIRD side: the
// degraded tier (a VIP moved from rhi0 to rhi1 is exported with a longer AS
// path, so the router prefers another site but keeps this one) and the
// fail-open guard's import tables (an ADC sees the other sites' announcements
// of a VIP without installing them). They run BIRD with the shipped
// deploy/bird/tiers.conf and need root and the build tag "integration".
package tiers
