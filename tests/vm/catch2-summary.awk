# Summarises Catch2 v2 XML reporter output (-r xml -d yes), also when it is cut short:
#   PASS   0.12s  test case name
#   FAIL   0.50s  test case name
#          file:line REQUIRE: original => expanded
#   INCOMPLETE    test case name        (started, no result: the test binary died or hung)
#   TOTAL passed=N failed=M incomplete=K
# Streams: reading a live reporter pipe, it prints each result as it comes; with -v progress=1
# also "RUN  name" when a test case starts (Catch2 closes an XML element only when it writes
# the next one, so a result line can come after the next RUN line).
# POSIX awk (runs in the guest's mawk and the host's gawk).
function unescape(s) {
  gsub(/&quot;/, "\"", s); gsub(/&apos;/, "'", s); gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s)
  gsub(/&amp;/, "\\&", s)
  return s
}
function attr(line, name,    r) {
  r = name "=\"[^\"]*\""
  if (!match(line, r)) return ""
  return unescape(substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 3))
}
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
function where(line) { return attr(line, "filename") ":" attr(line, "line") }
BEGIN { passed = failed = incomplete = 0; open_case = 0 }
/<TestCase / {
  if (open_case) { print "INCOMPLETE    " name; incomplete++ }
  name = attr($0, "name"); open_case = 1; detail = ""; mode = ""
  if (progress) { print "RUN           " name; fflush() }
  next
}
/<Expression success="false"/ { mode = "expr"; loc = where($0); kind = attr($0, "type"); orig = exp_ = ""; next }
mode == "expr" && /<Original>/ { sub_mode = "orig"; next }
mode == "expr" && /<Expanded>/ { sub_mode = "exp"; next }
mode == "expr" && /<\/Original>|<\/Expanded>/ { sub_mode = ""; next }
mode == "expr" && /<\/Expression>/ {
  if (detail == "") detail = "       " loc " " kind ": " orig " => " exp_
  mode = ""; next
}
mode == "expr" && sub_mode == "orig" { orig = orig (orig == "" ? "" : " ") unescape(trim($0)); next }
mode == "expr" && sub_mode == "exp" { exp_ = exp_ (exp_ == "" ? "" : " ") unescape(trim($0)); next }
/<(FatalErrorCondition|Exception|Failure)[ >]/ {
  tag = $0; sub(/^[ \t]*</, "", tag); sub(/[ >].*/, "", tag)
  text = $0; sub(/^[^>]*>/, "", text); sub(/<\/.*/, "", text)
  loc = where($0)
  if (index($0, "</" tag ">") == 0) {  # multi-line body
    while ((getline l) > 0) {
      if (index(l, "</" tag ">")) { sub(/<\/.*/, "", l); text = text " " trim(l); break }
      text = text " " trim(l)
    }
  }
  if (detail == "") detail = "       " loc " " tag ": " unescape(trim(text))
  next
}
/<OverallResult success=/ {
  d = attr($0, "durationInSeconds")
  if (d == "") d = "?"
  else d = sprintf("%.2fs", d)
  if (attr($0, "success") == "true") { printf "PASS %8s  %s\n", d, name; passed++ }
  else { printf "FAIL %8s  %s\n", d, name; if (detail != "") print detail; failed++ }
  open_case = 0; fflush(); next
}
END {
  if (open_case) { print "INCOMPLETE    " name; incomplete++ }
  printf "TOTAL passed=%d failed=%d incomplete=%d\n", passed, failed, incomplete
}
