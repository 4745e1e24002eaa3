<%doc>
  The plain-Python executor of one loop nest: the scheduled DAST as Python source.
  Context: header, name, params (identifiers), body (lines, indented one level below the def),
  outputs (identifiers returned, in order).
</%doc>\
# ${header}
def ${name}(${", ".join(params)}):
% for line in body:
    ${line}
% endfor
    return (${"".join(o + ", " for o in outputs)})
