{{/*
What the controller and di-server pods share: hardening, scheduling, the image, the settings.
Each takes dict "root" $ "component" "<name>" "values" .Values.<name>.
*/}}

{{/* Pod template metadata: labels and annotations (a settings change rolls the pods). */}}
{{- define "dihera.podMetadata" -}}
labels:
  {{- include "dihera.componentSelectorLabels" . | nindent 2 }}
  {{- with .values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  checksum/settings: {{ include (print .root.Template.BasePath "/settings-configmap.yaml") .root | sha256sum }}
  {{- with .values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* Pod-level fields besides the containers. */}}
{{- define "dihera.podSpecCommon" -}}
automountServiceAccountToken: true
enableServiceLinks: false
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  # The root filesystem is read-only: a small writable /tmp.
  - name: tmp
    emptyDir:
      sizeLimit: 64Mi
  {{- with .volumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
Container fields besides name, ports and probes: `dihera <component> [args...] [extraArgs...]`, settings,
hardening. Optional "args": the component's own flags, "env" its own variables; "volumes" (of dihera.podSpecCommon) and "mounts": its
own volumes.
*/}}
{{- define "dihera.containerCommon" -}}
image: {{ include "dihera.image" .root }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
args:
  - {{ .component }}
  {{- range .args }}
  - {{ . | quote }}
  {{- end }}
  {{- with .values.extraArgs }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
envFrom:
  - configMapRef:
      name: {{ include "dihera.settingsName" .root }}
env:
  - name: DIHERA_POD_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.name
  - name: DIHERA_POD_NAMESPACE
    valueFrom:
      fieldRef:
        fieldPath: metadata.namespace
  {{- with .env }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
securityContext:
  {{- toYaml .root.Values.securityContext | nindent 2 }}
resources:
  {{- toYaml .values.resources | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  {{- with .mounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
