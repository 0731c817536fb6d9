// Package monitoring holds the tests of what docs/monitoring.md tells an
// operator to set up: the scrape job it documents, and (root, tag
// integration) a real Prometheus scraping a running rhi in the netns lab
// with that job and the shipped alert rules.
package monitoring
