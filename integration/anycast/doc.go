// Package anycast holds the end-to-end tests of rhi (build tag integration,
// root): real rhi processes on the ADC hosts of the netns lab
// (integration/lab), each run by the site harness (integration/site), judged
// at the lab's peer router.
package anycast
