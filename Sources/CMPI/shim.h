// Open MPI's handles are macros that cast the address of a library global (MPI_COMM_WORLD is
// `(MPI_Comm)&ompi_mpi_comm_world`); Swift imports no such macro, so each one used is returned by
// an inline function here, under its MPI name in lower case.
#include <mpi.h>

static inline MPI_Comm cmpi_comm_world(void) { return MPI_COMM_WORLD; }
static inline MPI_Datatype cmpi_float(void) { return MPI_FLOAT; }
static inline MPI_Datatype cmpi_double(void) { return MPI_DOUBLE; }
static inline MPI_Datatype cmpi_int64(void) { return MPI_INT64_T; }
static inline MPI_Datatype cmpi_uint64(void) { return MPI_UINT64_T; }
static inline MPI_Op cmpi_sum(void) { return MPI_SUM; }
static inline MPI_Op cmpi_max(void) { return MPI_MAX; }
static inline MPI_Op cmpi_min(void) { return MPI_MIN; }
static inline void *cmpi_in_place(void) { return MPI_IN_PLACE; }
static inline MPI_Errhandler cmpi_errors_return(void) { return MPI_ERRORS_RETURN; }
