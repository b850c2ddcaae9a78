# cmake -DIN=PAGE -DOUT=PAGE.gz -DVERSION=X.Y.Z -DGZIP=gzip -P man_gz.cmake
#
# One manual page as it is installed: the project's version stamped into the .TH line's source
# field (the pages say only "barrierd", so that no page goes stale when the version moves), then
# gzip -9n (no name, no time stamp: the same bytes at every build).  .so link pages have no .TH
# line and pass through unchanged.
file(READ "${IN}" page)
string(REGEX REPLACE "(\n\\.TH [^\n]*)\"barrierd\"" "\\1\"barrierd ${VERSION}\"" page
       "\n${page}")
string(SUBSTRING "${page}" 1 -1 page)
file(WRITE "${OUT}.tmp" "${page}")
execute_process(COMMAND "${GZIP}" -9n -c "${OUT}.tmp" OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc)
file(REMOVE "${OUT}.tmp")
if(NOT rc EQUAL 0)
  file(REMOVE "${OUT}")
  message(FATAL_ERROR "gzip -9n ${IN}: ${rc}")
endif()
