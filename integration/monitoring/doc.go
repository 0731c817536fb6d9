// Package monitoring holds the tests of what docs/monitoring.md tells an
// operator to set up, which run with the lab (tag integration): the scrape
// job it documents selects the shipped rules, and (as root) a real
// Prometheus scrapes a running rhi in the netns lab with that job and those
// rules.
package monitoring
