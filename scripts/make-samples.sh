#!/usr/bin/env bash
# Makes the small real media in samples/ with ffmpeg (idempotent: re-creates them all).
# bodycam-2024-05-01.mp4  H.264 + AAC, creation_time 2024-05-01T09:30:00Z
# interview.wav           PCM 16-bit mono
# scene-photo.jpg         JPEG still
# incident-report.txt     a document (not media)
# truncated.mp4           the MP4 cut short: corrupt media, still ingested with a probe error
set -euo pipefail
out=${1:-samples}
mkdir -p "$out"
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
ff -f lavfi -i "testsrc=size=320x240:rate=25:duration=2" -f lavfi -i "sine=frequency=440:duration=2" \
   -c:v libx264 -preset veryfast -pix_fmt yuv420p -c:a aac -b:a 64k -shortest \
   -metadata creation_time=2024-05-01T09:30:00Z -movflags +faststart -fflags +bitexact \
   "$out/bodycam-2024-05-01.mp4"
ff -f lavfi -i "sine=frequency=660:duration=1:sample_rate=16000" -c:a pcm_s16le -fflags +bitexact "$out/interview.wav"
ff -f lavfi -i "testsrc=size=320x240:duration=1" -frames:v 1 -fflags +bitexact "$out/scene-photo.jpg"
cat > "$out/incident-report.txt" <<'TXT'
Incident report 2024-05-01
Unit K-9, patrol 3. Body-cam footage and an audio interview were recorded on scene.
This text file stands for the documents capture devices and officers drop beside media.
TXT
# Without faststart the index (moov) comes last: cutting the file loses it, as a camera
# that lost power mid-recording would.
ff -f lavfi -i "testsrc=size=160x120:rate=10:duration=1" -c:v libx264 -preset veryfast -pix_fmt yuv420p \
   -fflags +bitexact "$out/.full-nofaststart.mp4"
head -c 2048 "$out/.full-nofaststart.mp4" > "$out/truncated.mp4"
rm -f "$out/.full-nofaststart.mp4"
ls -l "$out"
