// Package guardbird reads, for the fail-open guard, which other sites serve
// each VIP, from BIRD's guard tables (deploy/bird/tiers.conf's rhi_guard4
// and rhi_guard6): one dump of each table per round plus "show protocols
// all", never one question per VIP. Sites are told apart by the site
// identity every site's BIRD tags its VIP routes with, the large community
// (AS, 2, site id); a path marked last resort (GRACEFUL_SHUTDOWN or
// (AS, 1, 2)) does not serve. What cannot be read or attributed is
// unknown, never "nobody".
package guardbird
