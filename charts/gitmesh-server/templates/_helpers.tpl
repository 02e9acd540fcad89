{{- define "gitmesh-server.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name when it already contains the chart name. */}}
{{- define "gitmesh-server.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gitmesh-server.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitmesh-server.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "gitmesh-server.workerName" -}}
{{- printf "%s-worker" (include "gitmesh-server.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gitmesh-server.workerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "gitmesh-server.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: worker
{{- end -}}

{{/*
GITMESH_WORKERS for the server, as a string: translationWorkers when a number; for "auto", "0" with
workers.enabled and "" (not set: the server's own default) without. Refuses 0 without workers, and
workers without Redis: in both cases nothing would translate.
*/}}
{{- define "gitmesh-server.translationWorkers" -}}
{{- $v := .Values.translationWorkers -}}
{{- $workers := .Values.workers.enabled -}}
{{- if and $workers (not (include "gitmesh-server.redisConfigured" .)) -}}
{{- fail "workers.enabled needs a shared Redis (the workers take their jobs from it): set redis.bundled.enabled=true or redis.external.url (or redis.external.existingSecret)" -}}
{{- end -}}
{{- $n := "" -}}
{{- if and (kindIs "string" $v) (eq $v "auto") -}}
{{- if $workers }}{{ $n = "0" }}{{ end -}}
{{- else -}}
{{- $n = int $v | toString -}}
{{- end -}}
{{- if and (eq $n "0") (not $workers) -}}
{{- fail "translationWorkers=0 needs workers.enabled=true: the server would translate nothing and no worker would either" -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{- define "gitmesh-server.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "gitmesh-server.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gitmesh
{{- end -}}

{{- define "gitmesh-server.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gitmesh-server.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gitmesh-server.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "gitmesh-server.redisName" -}}
{{- printf "%s-redis" (include "gitmesh-server.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* "true" when the server has a shared Redis (bundled, or external by URL or Secret), else "". */}}
{{- define "gitmesh-server.redisConfigured" -}}
{{- if or .Values.redis.bundled.enabled .Values.redis.external.url .Values.redis.external.existingSecret -}}true{{- end -}}
{{- end -}}

{{/*
The Redis connection as container env entries (REDIS_URL, GITMESH_REDIS_PREFIX), one definition
for the server and the workers: both must reach the same Redis under the same key prefix. Nothing
when no Redis is configured (the server then keeps its state in memory).
*/}}
{{- define "gitmesh-server.redisEnv" -}}
{{- $redis := .Values.redis -}}
{{- if $redis.bundled.enabled }}
- name: REDIS_URL
  value: {{ printf "redis://%s:6379" (include "gitmesh-server.redisName" .) | quote }}
{{- else if or $redis.external.url $redis.external.existingSecret }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ default (printf "%s-redis" (include "gitmesh-server.fullname" .)) $redis.external.existingSecret }}
      key: {{ ternary $redis.external.existingSecretKey "url" (ne $redis.external.existingSecret "") }}
{{- end }}
{{- if include "gitmesh-server.redisConfigured" . }}
- name: GITMESH_REDIS_PREFIX
  value: {{ $redis.prefix | quote }}
- name: GITMESH_RETENTION_COMMITS
  value: {{ $redis.retention.commits | quote }}
- name: GITMESH_RETENTION_DESIRED_STATES
  value: {{ $redis.retention.desiredStates | quote }}
- name: GITMESH_RETENTION_MAX_AGE_HOURS
  value: {{ $redis.retention.maxAgeHours | quote }}
{{- end }}
{{- end -}}

{{- define "gitmesh-server.gitCredentialsSecret" -}}
{{- if .Values.git.credentials.existingSecret -}}
{{- .Values.git.credentials.existingSecret -}}
{{- else if .Values.git.credentials.password -}}
{{- printf "%s-git-credentials" (include "gitmesh-server.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "gitmesh-server.webhookSecret" -}}
{{- default (printf "%s-webhook" (include "gitmesh-server.fullname" .)) .Values.webhook.existingSecret -}}
{{- end -}}

{{/*
A secret value created once and kept: the value already in the cluster (lookup; always empty
under `helm template`, which therefore generates a fresh value on every render), else the given
value, else a random one. Arguments: dict "ctx" . "name" secretName "key" dataKey "value" given.
*/}}
{{- define "gitmesh-server.keptValue" -}}
{{- $existing := lookup "v1" "Secret" .ctx.Release.Namespace .name -}}
{{- if and $existing $existing.data (hasKey $existing.data .key) -}}
{{- index $existing.data .key -}}
{{- else if .value -}}
{{- .value | b64enc -}}
{{- else -}}
{{- randAlphaNum 48 | b64enc -}}
{{- end -}}
{{- end -}}

{{/* meshCa.secretRefs grouped by namespace (YAML map namespace -> [names]); namespace defaults to gloo-mesh. */}}
{{- define "gitmesh-server.meshCaSecretRefs" -}}
{{- $by := dict -}}
{{- range .Values.meshCa.secretRefs -}}
{{- $ns := default "gloo-mesh" .namespace -}}
{{- $_ := set $by $ns (append (get $by $ns | default list) .name) -}}
{{- end -}}
{{- toYaml $by -}}
{{- end -}}

{{/*
A PodDisruptionBudget, or nothing when there can never be more than one pod (a budget on a single
pod blocks every drain or protects nothing). Arguments: dict "ctx" . "name" objectName "component"
label "selector" selectorLabelsYaml "pdb" values "path" valuesPath "fewest" fewestPods "most" mostPods.
minAvailable (a number, or a percentage rounded up as Kubernetes does) must leave one pod disruptable
at the fewest pods there can be; maxUnavailable (at least 1, or a percentage rounded up) always does.
*/}}
{{- define "gitmesh-server.podDisruptionBudget" -}}
{{- $pdb := .pdb -}}
{{- if and $pdb.enabled (gt (int .most) 1) }}
{{- $fewest := max (int .fewest) 1 -}}
{{- $min := $pdb.minAvailable -}}
{{- $useMin := not (and (kindIs "string" $min) (eq $min "")) -}}
{{- if $useMin -}}
{{- $required := 0 -}}
{{- if kindIs "string" $min -}}
{{- $required = div (add (mul (int (trimSuffix "%" $min)) $fewest) 99) 100 -}}
{{- else -}}
{{- $required = int $min -}}
{{- end -}}
{{- if ge (int $required) (int $fewest) -}}
{{- fail (printf "%s.minAvailable=%v allows no voluntary disruption with %d pod(s), the fewest there can be: node drains would block; lower it, or use %s.maxUnavailable" .path $min $fewest .path) -}}
{{- end -}}
{{- end }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "gitmesh-server.labels" .ctx | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  {{- if $useMin }}
  minAvailable: {{ if kindIs "string" $min }}{{ $min | quote }}{{ else }}{{ int $min }}{{ end }}
  {{- else }}
  maxUnavailable: {{ if kindIs "string" $pdb.maxUnavailable }}{{ $pdb.maxUnavailable | quote }}{{ else }}{{ int $pdb.maxUnavailable }}{{ end }}
  {{- end }}
  # A pod that is not ready (e.g. a worker cut off from Redis) never holds a drain up.
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- .selector | nindent 6 }}
{{- end }}
{{- end -}}
