{{/*
The pod template of both storage backends: the StatefulSet's (pebble, with
the data directory on its volume claim) and the Deployment's (postgres,
with the URL Secret). Everything else is the same: arguments, probes,
security context, token Secret, resources.
*/}}
{{- define "eventstore.podTemplate" -}}
{{- $postgres := eq (include "eventstore.backend" .) "postgres" -}}
metadata:
  labels:
    {{- include "eventstore.selectorLabels" . | nindent 4 }}
  {{- if or .Values.token.value (and $postgres .Values.storage.postgres.url) }}
  # The URL is read once at start: a changed value restarts the pods (so
  # does a changed token value, which eventstore reads again by itself).
  annotations:
    {{- if .Values.token.value }}
    checksum/api-token: {{ .Values.token.value | sha256sum | quote }}
    {{- end }}
    {{- if and $postgres .Values.storage.postgres.url }}
    checksum/postgres-url: {{ .Values.storage.postgres.url | sha256sum | quote }}
    {{- end }}
  {{- end }}
spec:
  # drainPeriod + shutdownTimeout + margin (default 10s + 30s + 10s = 50s).
  # No preStop hook: eventstore drains itself on SIGTERM.
  terminationGracePeriodSeconds: {{ int .Values.terminationGracePeriodSeconds }}
  {{- if .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml .Values.topologySpreadConstraints | nindent 4 }}
  {{- else if $postgres }}
  # Nodes on different Kubernetes nodes where the cluster allows it (soft).
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "eventstore.selectorLabels" . | nindent 10 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: eventstore
      image: {{ include "eventstore.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy | quote }}
      args:
        - "run"
        {{- if .Values.accessFile.existingSecret }}
        - "--access-file=/etc/eventstore/access/access.yaml"
        {{- else }}
        - "--api-token-file=/etc/eventstore/secrets/token"
        {{- end }}
        {{- if $postgres }}
        - "--storage-backend=postgres"
        - "--postgres-url-file=/etc/eventstore/postgres/url"
        - {{ printf "--postgres-max-connections=%d" (int .Values.storage.postgres.maxConnections) | quote }}
        {{- else }}
        - "--data-directory=/var/lib/eventstore"
        {{- end }}
        - "--http-enabled"
        - "--https-enabled=false"
        - {{ printf "--shutdown-drain-period=%s" .Values.drainPeriod | quote }}
        - {{ printf "--shutdown-timeout=%s" .Values.shutdownTimeout | quote }}
        {{- if .Values.ui.enabled }}
        - "--with-ui"
        {{- end }}
      {{- with .Values.extraEnv }}
      env:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      ports:
        - name: http
          containerPort: 3000
          protocol: TCP
      # /api/v1/ping needs no token.
      startupProbe:
        httpGet:
          path: /api/v1/ping
          port: http
        periodSeconds: 2
        failureThreshold: 150
      readinessProbe:
        httpGet:
          path: /api/v1/ping
          port: http
        periodSeconds: 5
        failureThreshold: 1
      livenessProbe:
        httpGet:
          path: /api/v1/ping
          port: http
        periodSeconds: 10
        failureThreshold: 6
      {{- with .Values.resources }}
      # eventstore takes 90% of the memory limit as its own (no --memory-limit).
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        readOnlyRootFilesystem: true
        allowPrivilegeEscalation: false
        capabilities:
          drop:
            - ALL
      volumeMounts:
        {{- if not $postgres }}
        - name: data
          mountPath: /var/lib/eventstore
        {{- end }}
        {{- if .Values.accessFile.existingSecret }}
        - name: access-file
          mountPath: /etc/eventstore/access
          readOnly: true
        {{- else }}
        - name: api-token
          mountPath: /etc/eventstore/secrets
          readOnly: true
        {{- end }}
        {{- if $postgres }}
        - name: postgres-url
          mountPath: /etc/eventstore/postgres
          readOnly: true
        {{- end }}
        - name: tmp
          mountPath: /tmp
  volumes:
    {{- if .Values.accessFile.existingSecret }}
    - name: access-file
      secret:
        secretName: {{ .Values.accessFile.existingSecret | quote }}
        defaultMode: 288 # = 0440 octal
    {{- else }}
    - name: api-token
      secret:
        secretName: {{ include "eventstore.tokenSecretName" . | quote }}
        defaultMode: 288 # = 0440 octal
    {{- end }}
    {{- if $postgres }}
    - name: postgres-url
      secret:
        secretName: {{ include "eventstore.postgresURLSecretName" . | quote }}
        defaultMode: 288 # = 0440 octal
    {{- end }}
    - name: tmp
      emptyDir: {}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
