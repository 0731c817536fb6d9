#!/usr/bin/env bash
# warmup.sh URL-FILE: one request through each APISIX route listed in URL-FILE
# (one URL a line, # comments), so that APISIX creates the health checker of
# each route's upstream. Installed on the ADCs as
# /usr/local/libexec/rhi-lab/warmup.sh and run by rhi-lab-warmup.service.
#
# APISIX creates a checker lazily, when a request goes through the upstream;
# until then the control API reports no checker, which rhi counts as
# failure_policy.no_checker (healthy by default) whatever the backends' state.
# A request counts as sent once APISIX has routed it, whatever the backends
# answer (a 502 from dead backends still creates the checker). Only "no route"
# (APISIX has not loaded apisix.yaml yet) or no answer at all is retried.
set -euo pipefail

urls=${1:?usage: warmup.sh URL-FILE}
# APISIX re-reads apisix.yaml once a second: let a change that triggered this
# run land first, so the request reaches the new upstream.
settle=${RHI_LAB_WARMUP_SETTLE:-2}
tries=${RHI_LAB_WARMUP_TRIES:-30}

sleep "$settle"
failed=0
while IFS= read -r url; do
	[[ -z $url || $url == \#* ]] && continue
	done_url=""
	for ((i = 1; i <= tries; i++)); do
		# The body matters only to tell APISIX's own 404 from a backend's.
		if out=$(curl -sS --max-time 2 --max-filesize 65536 -w '\n%{http_code}' "$url" 2>&1); then
			code=${out##*$'\n'}
			if [[ $code != 404 || $out != *"Route Not Found"* ]]; then
				echo "warm-up: $url: HTTP $code"
				done_url=1
				break
			fi
		fi
		sleep 1
	done
	if [[ -z $done_url ]]; then
		echo "warm-up: $url: APISIX did not route it in $tries tries: ${out%%$'\n'*}" >&2
		failed=1
	fi
done <"$urls"
exit "$failed"
