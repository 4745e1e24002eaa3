<%doc>
  Final values of a nest's loop variables, from the loop bounds alone (as Python leaves them:
  the last value of the last instance of the loop that ran), for runs whose loops did not run
  in source order. Context: name, params, finals: list of (variable, lines), the lines of a
  search that returns the value (indented one level below its def), or UNCHANGED if the loop
  never ran (the variable then keeps its value).
</%doc>\
def ${name}(${", ".join(params)}):
% for var, lines in finals:
    def final_${var}():
    % for line in lines:
        ${line}
    % endfor
        return UNCHANGED
% endfor
    return (${"".join("final_%s(), " % f[0] for f in finals)})
